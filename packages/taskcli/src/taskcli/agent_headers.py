"""``agent-task agent headers``: the MCP headers helper the harness runs before it connects.

``agent setup`` writes this command into the MCP server entry (Claude Code's
``headersHelper``, Codex's ``http_headers_helper``) instead of the token: the harness runs it
and sends the headers it prints, ``{"Authorization": "Bearer <token>"}``, read from
``--token-file`` (or ``$AGENT_TASK_TOKEN_FILE``, or the token in ``$AGENT_TASK_TOKEN``). So the
settings file, which a team commits, holds a path outside the work tree and never the secret.

With ``--grant-file G`` (``agent setup --oauth --share-grant``) the token is the access token
of the command line's OAuth grant (``agent-task agent login``), refreshed first when it has
less than a minute left (:mod:`taskcore.agentsetup.grant`): the harness and the hooks then
act as one agent, the grant.

Dispatched by :mod:`taskcli.entry` before click is imported (it runs at every MCP connection).
A token that cannot be read: a message on stderr and exit status 4 (the harness reports the
helper's failure and does not connect).
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # not typing's: importing typing alone costs ~5 ms
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["USAGE", "main", "option_of", "token_file_of"]

USAGE = (
    "usage: agent-task agent headers [--token-file FILE | --grant-file GRANT]\n\n"
    "Print the MCP request headers for the agent's token as JSON "
    '({"Authorization": "Bearer ..."}): the token of FILE, $AGENT_TASK_TOKEN_FILE or '
    "$AGENT_TASK_TOKEN; or the access token of the OAuth grant GRANT ('agent-task agent "
    "login'), refreshed when stale. Claude Code's headersHelper and Codex's "
    "http_headers_helper run it.\n"
)


def token_file_of(argv: Sequence[str]) -> str | None:
    """The ``--token-file`` given (``--token-file F`` or ``--token-file=F``), or ``None``.

    ``ValueError`` for any other argument.

    >>> token_file_of(["--token-file=/t"]), token_file_of([])
    ('/t', None)
    """
    found = option_of(argv)
    if found is not None and found[0] != "--token-file":
        raise ValueError(found[0])
    return None if found is None else found[1]


def option_of(argv: Sequence[str]) -> tuple[str, str] | None:
    """The one option given, ``--token-file`` or ``--grant-file``, and its value; or ``None``.

    ``ValueError`` for any other argument.

    >>> option_of(["--grant-file", "/g.json"])
    ('--grant-file', '/g.json')
    """
    items = list(argv)
    if not items:
        return None
    name, eq, value = items[0].partition("=")
    if name not in ("--token-file", "--grant-file"):
        raise ValueError(items[0])
    if not eq:
        if len(items) != 2:
            raise ValueError(f"{name} needs one value")
        value = items[1]
    elif len(items) != 1:
        raise ValueError(items[1])
    if not value:
        raise ValueError(f"{name} needs a value")
    return name, value


def main(argv: Sequence[str]) -> int:
    """Print the headers; 0, or 2 (usage) / 4 (no readable token) with the reason on stderr."""
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(USAGE)
        return 0
    try:
        given = option_of(argv)
    except ValueError as bad:
        sys.stderr.write(f"agent-task agent headers: unexpected {str(bad)[:100]!r}\n{USAGE}")
        return 2
    if given is not None and given[0] == "--grant-file":
        from taskcore.agentsetup.grant import GrantError

        from taskcli.agent_grant import grant_token

        try:
            token, _grant = grant_token(given[1])
        except (GrantError, OSError) as err:
            sys.stderr.write(f"agent-task agent headers: {str(err)[:300]}\n")
            return 4
        sys.stdout.write(json.dumps({"Authorization": f"Bearer {token}"}) + "\n")
        return 0
    path = given[1] if given is not None else None
    path = path or os.environ.get("AGENT_TASK_TOKEN_FILE", "").strip() or None
    if path is not None:
        from taskcore.errors import TaskError
        from taskcore.tokenfile import read_token_file

        try:
            token = read_token_file(path)
        except TaskError as err:
            sys.stderr.write(f"agent-task agent headers: {err}\n")
            return 4
    else:
        token = os.environ.get("AGENT_TASK_TOKEN", "").strip()
        if not token:
            sys.stderr.write(
                "agent-task agent headers: no token: give --token-file FILE "
                "(or set AGENT_TASK_TOKEN_FILE, or AGENT_TASK_TOKEN)\n"
            )
            return 4
    sys.stdout.write(json.dumps({"Authorization": f"Bearer {token}"}) + "\n")
    return 0
