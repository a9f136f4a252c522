"""A local stand-in for GitHub and GitLab that checks each request against the documented shape.

The forges' APIs cannot be reached from here, so this server is the one test double: it
accepts only requests matching the shapes below (method, path, headers, body fields and their
enums and lengths) as the forges document them, records every request, and answers with a
programmable sequence of status codes. A request that does not match is answered 422 and
recorded as a violation, which the tests assert never happens.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GITHUB_SHAPE: dict[str, Any] = {
    "source": "https://docs.github.com/en/rest/commits/statuses?apiVersion=2022-11-28"
    "#create-a-commit-status",
    "method": "POST",
    "path": r"/repos/(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+)/statuses/"
    r"(?P<sha>[0-9a-f]{40})",
    # "Accept: application/vnd.github+json", "Authorization: Bearer <YOUR-TOKEN>",
    # "X-GitHub-Api-Version: 2022-11-28" are the headers of the documented request.
    "headers": {
        "Accept": r"application/vnd\.github\+json",
        "Authorization": r"Bearer \S+",
        "X-GitHub-Api-Version": r"2022-11-28",
        "Content-Type": r"application/json.*",
        "User-Agent": r".+",  # GitHub refuses requests without one
    },
    "body_required": {"state"},
    "body_allowed": {"state", "target_url", "description", "context"},
    "enums": {"state": {"error", "failure", "pending", "success"}},
    # 140 is the description bound the issue sets for GitHub statuses.
    "max_len": {"description": 140},
    "string_fields": {"state", "target_url", "description", "context"},
}

GITLAB_SHAPE: dict[str, Any] = {
    "source": "https://docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit",
    "method": "POST",
    "path": r"/api/v4/projects/(?P<id>[^/]+)/statuses/(?P<sha>[0-9a-f]{40})",
    # "PRIVATE-TOKEN: <your_access_token>" (or an OAuth "Authorization: Bearer" token).
    "headers_any": [{"PRIVATE-TOKEN": r"\S+"}, {"Authorization": r"Bearer \S+"}],
    "headers": {"Content-Type": r"application/json.*"},
    "body_required": {"state"},
    "body_allowed": {
        "state",
        "ref",
        "name",
        "context",
        "target_url",
        "description",
        "coverage",
        "pipeline_id",
    },
    "enums": {"state": {"pending", "running", "success", "failed", "canceled", "skipped"}},
    # "Must be 255 characters or fewer." (ref, target_url, description)
    "max_len": {"ref": 255, "target_url": 255, "description": 255},
    "string_fields": {"state", "ref", "name", "context", "target_url", "description"},
}


def violations(
    shape: dict[str, Any], method: str, path: str, headers: Any, body: bytes
) -> list[str]:
    """Everything about one request that the documented shape does not allow."""
    out = []
    if method != shape["method"]:
        out.append(f"method {method}")
    if re.fullmatch(shape["path"], path) is None:
        out.append(f"path {path}")
    for name, pattern in shape["headers"].items():
        value = headers.get(name)
        if value is None or re.fullmatch(pattern, value) is None:
            out.append(f"header {name}={value!r}")
    if "headers_any" in shape and not any(
        all(
            headers.get(n) is not None and re.fullmatch(p, headers.get(n)) is not None
            for n, p in option.items()
        )
        for option in shape["headers_any"]
    ):
        out.append("no accepted credential header")
    try:
        payload = json.loads(body)
    except ValueError:
        return [*out, "body is not JSON"]
    if not isinstance(payload, dict):
        return [*out, "body is not an object"]
    missing = shape["body_required"] - payload.keys()
    unknown = payload.keys() - shape["body_allowed"]
    out += [f"missing {m}" for m in sorted(missing)] + [f"unknown {u}" for u in sorted(unknown)]
    for name in shape["string_fields"] & payload.keys():
        if not isinstance(payload[name], str):
            out.append(f"{name} is not a string")
    for name, allowed in shape["enums"].items():
        if name in payload and payload[name] not in allowed:
            out.append(f"{name}={payload[name]!r}")
    for name, limit in shape["max_len"].items():
        if isinstance(payload.get(name), str) and len(payload[name]) > limit:
            out.append(f"{name} longer than {limit}")
    return out


class FakeForge:
    """A GitHub or GitLab stand-in on 127.0.0.1 (``port=0``: any free port).

    ``replies`` is consumed one status per request (then 201 for ever); ``retry_after`` is
    sent with every 429.
    """

    def __init__(
        self,
        shape: dict[str, Any],
        *,
        port: int = 0,
        replies: list[int] | None = None,
        retry_after: str | None = None,
    ) -> None:
        self.shape = shape
        self.replies = list(replies or [])
        self.retry_after = retry_after
        self.requests: list[dict[str, Any]] = []
        self.violations: list[list[str]] = []
        forge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                problems = violations(
                    forge.shape, "POST", self.path.split("?")[0], self.headers, body
                )
                forge.requests.append(
                    {
                        "path": self.path,
                        # Header names are case-insensitive (urllib sends "X-github-api-version").
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": json.loads(body) if not problems else body,
                    }
                )
                if problems:
                    forge.violations.append(problems)
                    status = 422
                else:
                    status = forge.replies.pop(0) if forge.replies else 201
                self.send_response(status)
                if status == 429 and forge.retry_after is not None:
                    self.send_header("Retry-After", forge.retry_after)
                answer = b"{}"
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def states(self) -> list[str]:
        return [r["body"]["state"] for r in self.requests if isinstance(r["body"], dict)]
