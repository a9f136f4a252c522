"""The task-stop hooks' slim pass: the full hook's steps for a stop that can pass.

:mod:`taskcli.task_stop` calls :func:`slim_pass` before click and the storage layer load; the
caller brings only the transport (``post``: one HTTP exchange, over the CLI's plain socket
client). The steps are the full hook's (:mod:`taskcore.collector.stophook`): the counter, a
local read, the one ``qualification`` exchange, a second local read; a pass when both reads
agree and the answer passes, the counter then reset. Every other outcome is for the full hook
to answer: :func:`slim_pass` returns ``False`` or raises
:class:`~taskcore.collector.quickstop.UndecidedError`, and :class:`Asked` carries the read and
the exchange already made, so the service is asked once per stop.
"""

from __future__ import annotations

import os

from taskcore.collector import quickstop as q

TYPE_CHECKING = False  # not typing's: importing typing alone costs a Stop hook ~5 ms
if TYPE_CHECKING:
    from collections.abc import Callable

    from taskcore.collector.quickstop import GitRun, Subject

__all__ = ["Asked", "Request", "slim_pass"]

Request = tuple[str, bytes, dict[str, str]]
"""One HTTP exchange's question: ``(path, body, headers)``."""


class Asked:
    """What the slim pass did before handing over: the first read and the one exchange.

    ``outcome`` is ``(status, body)`` or the transport's exception.
    """

    def __init__(self, subject: Subject, head: str) -> None:
        self.subject, self.head = subject, head
        self.request: Request | None = None
        self.outcome: tuple[int, bytes] | Exception | None = None


def slim_pass(
    raw: bytes,
    *,
    change: str,
    repository: str,
    profile: str,
    workspace: str,
    data_dir: str,
    token_file: str,
    request: Callable[[str], Request],
    post: Callable[[Request], tuple[int, bytes]],
    failure: type[Exception],
    asked: list[Asked],
    git: GitRun | None = None,
) -> bool:
    """Run the pass; ``True`` if the stop passes (counter reset), else ``False``.

    ``request(token)`` builds the qualification exchange, ``post`` makes it (raising
    ``failure`` when the transport fails). Raises :class:`~taskcore.collector.quickstop.
    UndecidedError` (or anything unexpected) when the full hook must answer; ``asked`` then
    holds the exchange if one was made. ``git``: the first read's git commands, started
    before the payload was read.
    """
    counter = q.counter_file(q.session_of(raw), change)
    q.read_counter(counter)
    if not os.path.isabs(token_file):
        raise q.UndecidedError("a relative token file")
    where = (data_dir, repository, profile, change, workspace)
    subject, head = q.local_state(*where, git=git)
    question = request(q.read_token(token_file))
    first = Asked(subject, head)
    first.request = question
    asked.append(first)
    try:
        first.outcome = post(question)
    except failure as err:
        first.outcome = err
        return False
    if q.local_state(*where) != (subject, head):
        return False
    status, content = first.outcome
    if not q.passes(status, content, subject):
        return False
    try:
        q.reset_counter(counter)
    except OSError:
        return False
    return True
