"""The operator board: server-rendered pages over registry operations, nothing else.

Every page is one or two :meth:`taskcore.Service.call` s with the signed-in token (door
``board``), so every read and every action is tier-, autonomy- and workspace-checked and
audited exactly as on the other doors; the board holds no decision of its own. It translates:
query strings and forms into operation input, results into HTML (Jinja2, autoescaped), and a
:class:`~taskcore.TaskError` into a page with the error's own message and HTTP status.

Security, in one place:

* sign-in by pasting a token; the browser gets a random session id in a cookie (``HttpOnly``,
  ``SameSite=Strict``, ``Path`` the board, ``Secure`` when the request came over TLS or
  ``secure=True``); the token stays server-side (:mod:`taskboard.sessions`);
* every form carries the session's CSRF token (the sign-in form a double-submit one), checked
  in constant time before anything else; a POST without it is refused with 403;
* ``Content-Security-Policy`` allows scripts, styles and fetches from the board's own origin
  only (no inline script anywhere), ``frame-ancestors 'none'``; pages are ``no-store``;
* a form body is bounded (``FORM_MAX_BYTES``) while it is read.

Live updates are progressive and come from the event stream: the queue, approvals, audit
and task pages name the events they show (``data-events`` on their live region); ``static/
board.js`` listens to ``/board/events`` (the session's ``GET /v1/events``: one audited
``observe.events`` opening, the session's own page loads left out, no event type line so
``onmessage`` sees all) and re-fetches the live region (header ``X-Board-Live: 1``) when one
arrives. Where there is no stream (other pages, a refused stream) it re-fetches every few
seconds. Without JavaScript every page works and a reload shows the same thing.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import re
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import anyio.to_thread
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send
from taskcore import Door, ErrorCode, Service, TaskError
from taskcore.events.stream import open_events
from taskcore.limits import EVENTS_WRITE_TIMEOUT_SECONDS

from taskboard.sessions import Session, SessionStore
from taskboard.stream import send_stream

__all__ = ["BOARD_PATH", "CSP", "FORM_MAX_BYTES", "LOGIN_COOKIE", "SESSION_COOKIE", "create_board"]

BOARD_PATH = "/board"
"""Where ``agent-task serve`` mounts the board."""
SESSION_COOKIE = "atb_session"
LOGIN_COOKIE = "atb_login"
FORM_MAX_BYTES = 64 * 1024
"""The largest form body the board reads (ours); more is refused with 413 while reading."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HERE = Path(__file__).parent
_CONSENT_PATH = re.compile(r"/oauth/oar_[0-9a-f]{32}")
"""The board pages a sign-in may return to (``?next=``): an OAuth consent page."""
_CSP_SOURCE = re.compile(r"[a-z][a-z0-9+.-]*:(//[A-Za-z0-9.:\[\]-]+)?")
_TIERS = ("agent", "member", "admin")
_BULK_ACTS = {"requeue": "agenttask.requeueMany", "cancel": "agenttask.cancelMany"}
"""The board's bulk acts (retry or cancel every task a filter matches) and their verbs."""
_SIGNED_OUT = {ErrorCode.UNAUTHENTICATED, ErrorCode.TOKEN_REVOKED}

Handler = Callable[[Request, Session, dict[str, str]], Awaitable[Response]]


def _ms(value: Any) -> str:
    if not isinstance(value, int):
        return "-"
    when = datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S") + "Z"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _short(value: Any, n: int = 12) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= n else text[:n] + "…"


_TITLE_KEYS = ("title", "goal", "summary", "prompt", "name")
"""Payload keys a task's title is read from, in order (the board's label, nothing more)."""
_TITLE_MAX = 80


def _title(payload: Any) -> str:
    """A task's title for a table row: its payload's first non-empty ``_TITLE_KEYS`` text.

    >>> _title({"goal": "demo", "x": 1}), _title({"title": "  a  b  "}), _title(None)
    ('demo', 'a b', '')
    >>> len(_title({"title": "x" * 500}))
    81
    """
    if not isinstance(payload, dict):
        return ""
    for key in _TITLE_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            return text if len(text) <= _TITLE_MAX else text[:_TITLE_MAX] + "…"
    return ""


def _workflow_outcome(task: Any) -> tuple[str, str]:
    """A subject page's workflow task: the status text and its colour class.

    A ``finished`` task counted (it has a ``completion``) or did not: the newest attempt's
    result outcome (or its transfer's) says which, so a failed run is never shown green.

    >>> _workflow_outcome({"state": "finished", "completion": "collector"})
    ('finished', 'done')
    >>> _workflow_outcome({"state": "finished", "completion": None,
    ...     "attempts": [{"resultOutcome": "failed"}], "transfer": None})
    ('finished · failed', 'failed')
    >>> _workflow_outcome({"state": "claimed"})
    ('claimed', 'claimed')
    """
    state = str(task.get("state", ""))
    if state != "finished":
        return state, state
    if task.get("completion"):
        return state, "done"
    attempts = task.get("attempts") or []
    outcome = attempts[0].get("resultOutcome") if attempts else None
    transfer = task.get("transfer")
    if outcome is None and isinstance(transfer, dict):
        outcome = transfer.get("outcome")
    return f"{state} · {outcome or 'not passed'}", "failed"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(_HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["ms"] = _ms
    env.filters["pretty"] = _pretty
    env.filters["short"] = _short
    env.filters["task_title"] = _title
    env.filters["workflow_outcome"] = _workflow_outcome
    return env


def _to_ms(value: str | None, what: str) -> int | None:
    """A ``datetime-local`` field (UTC) to milliseconds; the format is the board's own."""
    if not value:
        return None
    try:
        when = datetime.datetime.fromisoformat(value).replace(tzinfo=datetime.UTC)
    except ValueError:
        raise TaskError(
            ErrorCode.INVALID_VALUE, f"{what} must be a date and time such as 2026-01-31T12:00"
        ) from None
    return int(when.timestamp() * 1000)


def _query(request: Request, *names: str) -> dict[str, str]:
    return {n: request.query_params[n] for n in names if request.query_params.get(n)}


def create_board(
    service: Service, *, secure: bool | None = None, sessions: SessionStore | None = None
) -> Starlette:
    """Build the board application over ``service`` (mount it at :data:`BOARD_PATH`).

    ``secure=None`` marks cookies ``Secure`` when the request arrived over TLS; pass
    ``True`` behind a TLS-terminating proxy that forwards plain HTTP.
    """
    env = _environment()
    store = sessions if sessions is not None else SessionStore()

    def base(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    def is_secure(request: Request) -> bool:
        return secure if secure is not None else request.url.scheme == "https"

    def headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        return response

    def render(
        request: Request,
        template: str,
        http_status: int = 200,
        session: Session | None = None,
        **context: Any,
    ) -> Response:
        ctx = {"base": base(request), "session": session, "request": request, **context}
        page = env.get_template(template)
        if request.headers.get("x-board-live") == "1" and "live" in page.blocks:
            # A live region's re-fetch renders no flash, so it leaves the flash for the page
            # load it was set for (a re-fetch racing the redirect after a form must not eat it).
            html = "".join(page.blocks["live"](page.new_context(ctx)))
        else:
            if session is not None and session.flash:
                ctx["flash"], session.flash = session.flash, None
            html = page.render(ctx)
        return headers(HTMLResponse(html, status_code=http_status))

    def redirect(request: Request, path: str) -> Response:
        return headers(RedirectResponse(base(request) + path, status_code=303))

    async def call(session: Session, name: str, body: dict[str, Any] | None = None) -> Any:
        raw = json.dumps(body or {}).encode()
        fn = functools.partial(service.call, session.bearer, name, raw, door=Door.BOARD)
        return (await anyio.to_thread.run_sync(fn)).json()

    async def read_form(request: Request) -> dict[str, str]:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > FORM_MAX_BYTES:
            raise TaskError(ErrorCode.PAYLOAD_TOO_LARGE, "the form is too large")
        data = bytearray()
        async for chunk in request.stream():
            data.extend(chunk)
            if len(data) > FORM_MAX_BYTES:
                raise TaskError(ErrorCode.PAYLOAD_TOO_LARGE, "the form is too large")
        fields = parse_qs(data.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in fields.items() if v}

    def guarded(fn: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            session = store.get(request.cookies.get(SESSION_COOKIE))
            if session is None:
                if request.headers.get("x-board-live") == "1":
                    return headers(Response(status_code=401))
                path = request.url.path.removeprefix(base(request))
                if request.method == "GET" and _CONSENT_PATH.fullmatch(path):
                    return redirect(request, "/login?" + urlencode({"next": path}))
                return redirect(request, "/login")
            form: dict[str, str] = {}
            try:
                if request.method == "POST":
                    form = await read_form(request)
                    if not session.csrf_ok(form.get("csrf")):
                        return render(
                            request,
                            "error.html",
                            403,
                            session,
                            title="Refused",
                            message="The form's CSRF token is missing or wrong; reload the "
                            "page and submit it again.",
                        )
                return await fn(request, session, form)
            except TaskError as err:
                if err.code in _SIGNED_OUT:
                    store.end(session.session_id)
                    return redirect(request, "/login?ended=1")
                return render(
                    request,
                    "error.html",
                    err.code.kind.http_status,
                    session,
                    title=err.code.kind.name.replace("_", " ").capitalize(),
                    message=err.describe(),
                    code=err.code.value,
                )

        return handler

    # -- sign-in -----------------------------------------------------------------------------
    async def login_page(request: Request) -> Response:
        nonce = secrets.token_urlsafe(32)
        response = render(
            request,
            "login.html",
            csrf=nonce,
            ended=request.query_params.get("ended") == "1",
            message=None,
            next=_next_page(request.query_params.get("next")),
        )
        response.set_cookie(
            LOGIN_COOKIE,
            nonce,
            httponly=True,
            samesite="strict",
            secure=is_secure(request),
            path=base(request) or "/",
            max_age=600,
        )
        return response

    async def login(request: Request) -> Response:
        try:
            form = await read_form(request)
        except TaskError as err:
            return render(request, "error.html", 413, title="Refused", message=err.describe())
        expected = request.cookies.get(LOGIN_COOKIE, "")
        given = form.get("csrf", "")
        if not expected or not secrets.compare_digest(given, expected):
            return render(
                request,
                "error.html",
                403,
                title="Refused",
                message="The sign-in form expired or came from elsewhere; open it again.",
            )
        bearer = form.get("token", "").strip()
        try:
            who = await anyio.to_thread.run_sync(
                functools.partial(service.call, bearer, "observe.whoami", b"{}", door=Door.BOARD)
            )
        except TaskError as err:
            return render(
                request,
                "login.html",
                401,
                csrf=given,
                ended=False,
                message=err.describe(),
                next=_next_page(form.get("next")),
            )
        me = who.json()
        session = store.create(bearer, me["tokenId"], me["workspace"])
        response = redirect(request, _next_page(form.get("next")) or "/queue")
        response.set_cookie(
            SESSION_COOKIE,
            session.session_id,
            httponly=True,
            samesite="strict",
            secure=is_secure(request),
            path=base(request) or "/",
        )
        response.delete_cookie(LOGIN_COOKIE, path=base(request) or "/")
        return response

    async def logout(request: Request, session: Session, form: dict[str, str]) -> Response:
        store.end(session.session_id)
        response = redirect(request, "/login")
        response.delete_cookie(SESSION_COOKIE, path=base(request) or "/")
        return response

    async def home(request: Request) -> Response:
        return redirect(request, "/queue")

    # -- the queue ---------------------------------------------------------------------------
    async def queue(request: Request, session: Session, form: dict[str, str]) -> Response:
        filters = _query(request, "status", "verb", "matterId")
        body: dict[str, Any] = dict(filters)
        if request.query_params.get("cursor"):
            body["cursor"] = request.query_params["cursor"]
        result = await call(session, "observe.backlog", body)
        stats = await call(session, "observe.stats")
        paused = await call(session, "agenttask.paused")
        return render(
            request,
            "queue.html",
            session=session,
            page="queue",
            result=result,
            stats=stats,
            paused=paused["verbs"],
            filters=filters,
            bulk_query=urlencode({k: v for k, v in filters.items() if v}),
            next_url=_next(request, filters, result.get("nextCursor")),
        )

    # -- scheduling: pause/resume a verb, retry/cancel every task a filter matches ------------
    async def pause_verb(request: Request, session: Session, form: dict[str, str]) -> Response:
        act = "agenttask.resume" if form.get("act") == "resume" else "agenttask.pause"
        answer = await call(session, act, {"verb": form.get("verb", "")})
        state = "paused" if answer["paused"] else "resumed"
        session.flash = f"Verb {answer['verb']} {state}."
        return redirect(request, "/queue")

    def bulk_request(request: Request, form: dict[str, str]) -> tuple[str, dict[str, Any]]:
        source = form if form else dict(request.query_params)
        act = source.get("act", "")
        if act not in _BULK_ACTS:
            raise TaskError(ErrorCode.INVALID_VALUE, "act must be requeue or cancel")
        filters = {k: source[k] for k in ("status", "verb", "matterId") if source.get(k)}
        return act, filters

    async def confirm_bulk(request: Request, session: Session, form: dict[str, str]) -> Response:
        act, filters = bulk_request(request, form)
        dry = await call(session, _BULK_ACTS[act], {**filters, "dryRun": True})
        return render(
            request,
            "bulk.html",
            session=session,
            page="queue",
            act=act,
            filters=filters,
            dry=dry,
        )

    async def bulk(request: Request, session: Session, form: dict[str, str]) -> Response:
        act, filters = bulk_request(request, form)
        if form.get("confirm") != act:
            # Only the confirmation page's form acts; anything else is asked first.
            return redirect(request, f"/queue/bulk?{urlencode({'act': act, **filters})}")
        answer = await call(session, _BULK_ACTS[act], filters)
        done = "requeued" if act == "requeue" else "cancelled"
        more = " More tasks match: run it again." if answer["more"] else ""
        session.flash = f"{len(answer['taskIds'])} tasks {done}.{more}"
        return redirect(request, "/queue")

    async def reorder(request: Request, session: Session, form: dict[str, str]) -> Response:
        task_id = str(request.path_params["task_id"])
        raw = form.get("priority", "")
        priority: Any = int(raw) if raw.lstrip("-").isdigit() and len(raw) < 20 else raw
        await call(session, "agenttask.reorder", {"taskId": task_id, "priority": priority})
        session.flash = f"Task {task_id} now has priority {priority}."
        back = form.get("back", "")
        return redirect(request, back if back.startswith("/queue") else "/queue")

    async def task(request: Request, session: Session, form: dict[str, str]) -> Response:
        detail = await call(session, "observe.task", {"taskId": request.path_params["task_id"]})
        return render(request, "task.html", session=session, page="queue", detail=detail)

    # -- approvals ---------------------------------------------------------------------------
    async def approvals(request: Request, session: Session, form: dict[str, str]) -> Response:
        body: dict[str, Any] = _query(request, "status", "cursor")
        result = await call(session, "observe.approvals", body)
        return render(
            request,
            "approvals.html",
            session=session,
            page="approvals",
            result=result,
            status=body.get("status", "PENDING"),
        )

    async def approve(request: Request, session: Session, form: dict[str, str]) -> Response:
        gate_id = str(request.path_params["gate_id"])
        decided = await call(session, "agenttask.gate.approve", {"gateId": gate_id})
        session.flash = f"Approved: task {decided['task']['taskId']} is queued with its grant."
        return redirect(request, "/approvals")

    async def deny(request: Request, session: Session, form: dict[str, str]) -> Response:
        gate_id = str(request.path_params["gate_id"])
        reason = form.get("reason", "")
        # The reason travels in the gate decision's own field; the core decides what it needs.
        decided = await call(session, "agenttask.gate.reject", {"gateId": gate_id, "note": reason})
        session.flash = f"Denied: task {decided['task']['taskId']} is FAILED."
        return redirect(request, "/approvals")

    # -- repositories ------------------------------------------------------------------------
    async def repositories(request: Request, session: Session, form: dict[str, str]) -> Response:
        result = await call(session, "observe.repositories", _query(request, "cursor"))
        return render(
            request, "repositories.html", session=session, page="repositories", result=result
        )

    async def changes(request: Request, session: Session, form: dict[str, str]) -> Response:
        body: dict[str, Any] = {"repositoryId": request.query_params.get("repository", "")}
        body.update(_query(request, "cursor"))
        result = await call(session, "observe.changes", body)
        return render(request, "changes.html", session=session, page="repositories", result=result)

    async def subjects(request: Request, session: Session, form: dict[str, str]) -> Response:
        q = request.query_params
        body: dict[str, Any] = {
            "repositoryId": q.get("repository", ""),
            "profileId": q.get("profile", ""),
            "changeId": q.get("change", ""),
        }
        body.update(_query(request, "cursor"))
        result = await call(session, "observe.subjects", body)
        return render(
            request,
            "subjects.html",
            session=session,
            page="repositories",
            result=result,
            repository=body["repositoryId"],
        )

    async def subject(request: Request, session: Session, form: dict[str, str]) -> Response:
        q = request.query_params
        seq = q.get("seq", "")
        body = {
            "repositoryId": q.get("repository", ""),
            "subjectSeq": int(seq) if seq.isdigit() and len(seq) < 20 else seq,
        }
        detail = await call(session, "observe.subject", body)
        return render(request, "subject.html", session=session, page="repositories", detail=detail)

    # -- audit -------------------------------------------------------------------------------
    async def audit(request: Request, session: Session, form: dict[str, str]) -> Response:
        filters = _query(request, "actor", "operation", "code", "taskId", "since", "until")
        body: dict[str, Any] = {
            k: v for k, v in filters.items() if k in ("actor", "operation", "code", "taskId")
        }
        since = _to_ms(filters.get("since"), "since")
        until = _to_ms(filters.get("until"), "until")
        if since is not None:
            body["sinceMs"] = since
        if until is not None:
            body["untilMs"] = until
        if request.query_params.get("cursor"):
            body["cursor"] = request.query_params["cursor"]
        result = await call(session, "observe.audit", body)
        return render(
            request,
            "audit.html",
            session=session,
            page="audit",
            result=result,
            filters=filters,
            next_url=_next(request, filters, result.get("nextCursor")),
        )

    # -- tokens ------------------------------------------------------------------------------
    async def tokens(request: Request, session: Session, form: dict[str, str]) -> Response:
        result = await call(session, "observe.tokens", {"includeRevoked": True})
        grants = await call(session, "oauth.grants", {"includeRevoked": True})
        secret, session.secret_once = session.secret_once, None
        return render(
            request,
            "tokens.html",
            session=session,
            page="tokens",
            result=result,
            grants=grants,
            secret=secret,
        )

    async def create_token(request: Request, session: Session, form: dict[str, str]) -> Response:
        raw = form.get("autonomy", "1")
        body: dict[str, Any] = {
            "tier": form.get("tier", ""),
            "autonomy": int(raw) if raw.isdigit() and len(raw) < 4 else raw,
            "name": form.get("name", ""),
        }
        issued = await call(session, "admin.token.create", body)
        session.secret_once = issued["token"]
        session.flash = f"Token {issued['record']['tokenId']} created; copy it now."
        return redirect(request, "/tokens")

    async def confirm_revoke(request: Request, session: Session, form: dict[str, str]) -> Response:
        token_id = str(request.path_params["token_id"])
        result = await call(session, "observe.tokens", {"includeRevoked": True})
        found = [t for t in result["tokens"] if t["tokenId"] == token_id]
        if not found:
            raise TaskError(ErrorCode.NOT_FOUND, f"no token with id {token_id[:64]!r} here")
        return render(request, "revoke.html", session=session, page="tokens", token=found[0])

    async def revoke(request: Request, session: Session, form: dict[str, str]) -> Response:
        token_id = str(request.path_params["token_id"])
        if form.get("confirm") != "revoke":
            # Only the confirmation page's form revokes; anything else is asked first.
            return redirect(request, f"/tokens/{quote(token_id, safe='')}/revoke")
        await call(session, "admin.token.revoke", {"tokenId": token_id})
        session.flash = f"Token {token_id} revoked."
        return redirect(request, "/tokens")

    # -- OAuth consent and grants -------------------------------------------------------------
    async def consent(request: Request, session: Session, form: dict[str, str]) -> Response:
        request_id = str(request.path_params["request_id"])
        shown = await call(session, "oauth.request.show", {"requestId": request_id})
        tiers = _TIERS[: _TIERS.index(shown["maxTier"]) + 1]
        autonomies = range(shown["maxAutonomy"] + 1)
        response = render(
            request,
            "oauth_consent.html",
            session=session,
            page="tokens",
            consent=shown,
            tiers=tiers,
            autonomies=autonomies,
            default_autonomy=min(1, shown["maxAutonomy"]),
        )
        # The approval redirects the browser to the client: form-action must allow it.
        target = _csp_source(shown["redirectUri"])
        if target is not None:
            response.headers["Content-Security-Policy"] = CSP.replace(
                "form-action 'self'", f"form-action 'self' {target}"
            )
        return response

    async def decide(request: Request, session: Session, form: dict[str, str]) -> Response:
        request_id = str(request.path_params["request_id"])
        verdict = request.path_params["verdict"]
        if verdict not in ("approve", "deny"):
            raise TaskError(ErrorCode.NOT_FOUND, "no such page")
        if verdict == "approve":
            raw = form.get("autonomy", "1")
            body: dict[str, Any] = {
                "requestId": request_id,
                "tier": form.get("tier", "agent"),
                "autonomy": int(raw) if raw.isdigit() and len(raw) < 4 else raw,
            }
            decided = await call(session, "oauth.request.approve", body)
        else:
            decided = await call(session, "oauth.request.deny", {"requestId": request_id})
        return headers(RedirectResponse(decided["redirectTo"], status_code=303))

    async def revoke_grant(request: Request, session: Session, form: dict[str, str]) -> Response:
        grant_id = str(request.path_params["grant_id"])
        await call(session, "oauth.grant.revoke", {"grantId": grant_id})
        session.flash = f"OAuth grant {grant_id} revoked; its tokens no longer work."
        return redirect(request, "/tokens")

    # -- live updates: the session's event stream --------------------------------------------
    async def events(scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        session = store.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            await headers(Response(status_code=401))(scope, receive, send)
            return
        task = request.query_params.get("task") or None
        opening = open_events(
            service,
            session.bearer,
            operations=tuple(request.query_params.getlist("operation")),
            task_id=task,
            door=Door.BOARD,
            own_reads=False,  # the board's own page loads are not news to it
            typed=False,
        )
        try:
            stream = await anyio.to_thread.run_sync(opening.__enter__)
        except TaskError as err:
            status = err.code.kind.http_status
            await headers(Response(err.describe(), status_code=status))(scope, receive, send)
            return
        try:
            await send_stream(
                stream,
                anyio.to_thread.run_sync,
                receive,
                send,
                write_timeout=EVENTS_WRITE_TIMEOUT_SECONDS,
                headers=[
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                ],
            )
        finally:
            opening.__exit__(None, None, None)

    # -- webhooks ----------------------------------------------------------------------------
    async def webhooks(request: Request, session: Session, form: dict[str, str]) -> Response:
        body: dict[str, Any] = _query(request, "status", "endpointId")
        result = await call(session, "observe.webhooks", body)
        return render(
            request, "webhooks.html", session=session, page="webhooks", result=result,
            status=body.get("status", ""),
        )  # fmt: skip

    async def redeliver(request: Request, session: Session, form: dict[str, str]) -> Response:
        raw = str(request.path_params["seq"])
        seq: Any = int(raw) if raw.isdigit() and len(raw) < 20 else raw
        again = await call(session, "admin.webhook.redeliver", {"seq": seq})
        session.flash = f"Delivery {again['delivery']['seq']} is queued again."
        return redirect(request, "/webhooks")

    async def not_found(request: Request, exc: Exception) -> Response:
        return render(request, "error.html", 404, title="Not found", message="No such page.")

    routes = [
        Route("/", home, methods=["GET"]),
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", guarded(logout), methods=["POST"]),
        Route("/queue", guarded(queue), methods=["GET"]),
        Route("/queue/pause", guarded(pause_verb), methods=["POST"]),
        Route("/queue/bulk", guarded(confirm_bulk), methods=["GET"]),
        Route("/queue/bulk", guarded(bulk), methods=["POST"]),
        Route("/tasks/{task_id}", guarded(task), methods=["GET"]),
        Route("/tasks/{task_id}/reorder", guarded(reorder), methods=["POST"]),
        Route("/approvals", guarded(approvals), methods=["GET"]),
        Route("/approvals/{gate_id}/approve", guarded(approve), methods=["POST"]),
        Route("/approvals/{gate_id}/deny", guarded(deny), methods=["POST"]),
        Route("/repositories", guarded(repositories), methods=["GET"]),
        Route("/changes", guarded(changes), methods=["GET"]),
        Route("/subjects", guarded(subjects), methods=["GET"]),
        Route("/subject", guarded(subject), methods=["GET"]),
        Route("/audit", guarded(audit), methods=["GET"]),
        Route("/tokens", guarded(tokens), methods=["GET"]),
        Route("/tokens", guarded(create_token), methods=["POST"]),
        Route("/tokens/{token_id}/revoke", guarded(confirm_revoke), methods=["GET"]),
        Route("/tokens/{token_id}/revoke", guarded(revoke), methods=["POST"]),
        Route("/oauth/grants/{grant_id}/revoke", guarded(revoke_grant), methods=["POST"]),
        Route("/oauth/{request_id}", guarded(consent), methods=["GET"]),
        Route(
            "/oauth/{request_id}/{verdict:str}",
            guarded(decide),
            methods=["POST"],
        ),
        Route("/webhooks", guarded(webhooks), methods=["GET"]),
        Route("/webhooks/{seq}/redeliver", guarded(redeliver), methods=["POST"]),
        Route("/events", _Asgi(events), methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=str(_HERE / "static")), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found})


def _next_page(value: str | None) -> str | None:
    """A board page to return to after sign-in: only a consent page, else ``None``."""
    return value if value and _CONSENT_PATH.fullmatch(value) else None


def _csp_source(uri: str) -> str | None:
    """The CSP source that allows navigating to ``uri`` (its origin, or its scheme)."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https") and parts.netloc:
        source = f"{parts.scheme}://{parts.netloc}"
    else:
        source = f"{parts.scheme}:"
    return source if _CSP_SOURCE.fullmatch(source) else None


class _Asgi:
    """A bare ASGI endpoint for a route (Starlette calls a plain function with a Request)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def _next(request: Request, filters: dict[str, str], cursor: str | None) -> str | None:
    if cursor is None:
        return None
    with contextlib.suppress(Exception):
        return f"{request.url.path}?{urlencode({**filters, 'cursor': cursor})}"
    return None
