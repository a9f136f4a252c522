"""Hosting the service: its settings, and what runs beside its doors while a server runs.

``agent-task serve`` and the ASGI app (:mod:`taskhttp.asgi`, for any ASGI server) run the
same service the same way; this module is the one place that decides how.

**Settings** (:data:`SETTINGS`, :class:`HostSettings`). Each has an environment variable, the
``serve`` flag of the same name, a default from :mod:`taskcore.limits` and its bound. A flag
given to ``serve`` wins over the variable, the variable over the default; the ASGI app has
only the variables. Where the journal is comes from the same two variables every command
reads: ``AGENT_TASK_DATA_DIR`` (:mod:`taskcore.paths`) and ``AGENT_TASK_DATABASE``
(:func:`taskcore.store.open_storage`).

==================================  ============================  ==========================
variable                            ``serve`` flag                what
==================================  ============================  ==========================
``AGENT_TASK_HEADER_TIMEOUT``       ``--header-timeout``          seconds to send headers
``AGENT_TASK_BODY_TIMEOUT``         ``--body-timeout``            seconds to send a body
``AGENT_TASK_KEEPALIVE_TIMEOUT``    ``--keepalive-timeout``       idle kept-alive seconds
``AGENT_TASK_MAX_CONNECTIONS``      ``--max-connections``         connections at once
``AGENT_TASK_MAX_BODY_BYTES``       ``--max-body-bytes``          body bytes held at once
``AGENT_TASK_TOKEN_RATE``           ``--token-rate``              calls/s per token
``AGENT_TASK_TOKEN_BURST``          ``--token-burst``             calls at once per token
``AGENT_TASK_REFUSAL_RATE``         ``--refusal-rate``            failed auths/s per address
``AGENT_TASK_REFUSAL_BURST``        ``--refusal-burst``           failed auths at once
``AGENT_TASK_LOG_FORMAT``           ``--log-format``              ``text`` or ``json``
``AGENT_TASK_BOARD_SECURE_COOKIES`` ``--board-secure-cookies``    ``1``: Secure board cookies
``AGENT_TASK_SESSION_GATE``         ``--session-gate-workspace``  workspaces (comma-separated)
==================================  ============================  ==========================

**The host** (:class:`Host`): opens (creating) the journal, builds the :class:`Service` with
the rate limits and, with the ``[otel]`` extra and the standard ``OTEL_*`` variables, a
tracer (:func:`taskcore.tracing.tracer_from_env`); starts the retention sweep
(``DATA_DIR/retention.json``), the forge-status delivery worker and the webhook worker
(:mod:`taskcore.events.webhook_delivery`); and stops them, closes the service and flushes
the tracer at the end. Only ``serve`` writes the
first admin token (``first_admin_token=True``); the ASGI app never does, and reports
instead whether the journal has a live admin token (:attr:`Host.has_admin_token`) and the
command that creates one (:func:`admin_token_command`).

>>> import tempfile
>>> settings = HostSettings.load(data_dir=Path(tempfile.mkdtemp()) / "data", environ={})
>>> settings.max_body_bytes == HTTP_BODY_BYTES_IN_FLIGHT_MAX, settings.log_format
(True, 'text')
>>> with Host(settings) as host:
...     host.service.health()["status"], host.has_admin_token
('ok', False)
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import attrs

from taskcore.actors import MAX_AUTONOMY, Tier
from taskcore.auth import FIRST_ADMIN_WORKSPACE, TokenAdmin
from taskcore.errors import ErrorCode, TaskError
from taskcore.events.webhook_delivery import WebhookDelivery, start_webhook_delivery
from taskcore.evidence.forge_delivery import ForgeDelivery, start_forge_delivery
from taskcore.limits import (
    COLLECTOR_ENVELOPE_MAX_BYTES,
    HTTP_BODY_BYTES_IN_FLIGHT_MAX,
    HTTP_BODY_TIMEOUT_SECONDS,
    HTTP_CONNECTIONS_MAX,
    HTTP_HEADER_TIMEOUT_SECONDS,
    HTTP_KEEPALIVE_TIMEOUT_SECONDS,
    RATE_ADDRESS_REFUSALS_BURST,
    RATE_ADDRESS_REFUSALS_PER_SECOND,
    RATE_TOKEN_CALLS_BURST,
    RATE_TOKEN_CALLS_PER_SECOND,
)
from taskcore.paths import default_data_dir
from taskcore.ratelimit import RateLimits
from taskcore.retention import RetentionSchedule, default_gate_index, load_retention_config
from taskcore.service import Service
from taskcore.tracing import Tracer, tracer_from_env

__all__ = [
    "LOG_FORMATS",
    "LOOPBACK_HOSTS",
    "SETTINGS",
    "Host",
    "HostSettings",
    "Setting",
    "admin_token_command",
    "public_url_of",
]

LOG_FORMATS = ("text", "json")
"""The request log's formats."""

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


@attrs.frozen(kw_only=True)
class Setting:
    """One setting: its :class:`HostSettings` field, variable, flag, default and bound."""

    name: str
    env: str
    flag: str
    kind: type
    default: Any
    help: str
    minimum: float | None = None
    choices: tuple[str, ...] = ()
    many: bool = False

    def parse(self, text: str) -> Any:
        """The value of the variable's ``text`` (bounds are checked by :class:`HostSettings`)."""
        given = text.strip()
        try:
            if self.many:
                return frozenset(part.strip() for part in given.split(",") if part.strip())
            if self.kind is bool:
                if given.lower() in _TRUE | _FALSE:
                    return given.lower() in _TRUE
                raise ValueError(given)
            return self.kind(given)
        except ValueError:
            raise TaskError(
                ErrorCode.INVALID_VALUE,
                f"{self.env}={given[:40]!r} is not {self.describe()}",
                details={"variable": self.env},
            ) from None

    def describe(self) -> str:
        """What a valid value is, for messages."""
        if self.many:
            return "a comma-separated list of workspaces"
        if self.kind is bool:
            return "1 or 0"
        if self.choices:
            return "one of " + ", ".join(self.choices)
        what = "a number" if self.kind is float else "a whole number"
        if self.minimum is None:
            return what
        bound = int(self.minimum) if float(self.minimum).is_integer() else self.minimum
        return f"{what} >= {bound}"


SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="header_timeout",
        env="AGENT_TASK_HEADER_TIMEOUT",
        flag="--header-timeout",
        kind=float,
        default=float(HTTP_HEADER_TIMEOUT_SECONDS),
        minimum=0.1,
        help="Seconds a connection may take to send one request's headers.",
    ),
    Setting(
        name="body_timeout",
        env="AGENT_TASK_BODY_TIMEOUT",
        flag="--body-timeout",
        kind=float,
        default=float(HTTP_BODY_TIMEOUT_SECONDS),
        minimum=0.1,
        help="Seconds a request may take to send its body once its headers are in.",
    ),
    Setting(
        name="keepalive_timeout",
        env="AGENT_TASK_KEEPALIVE_TIMEOUT",
        flag="--keepalive-timeout",
        kind=int,
        default=HTTP_KEEPALIVE_TIMEOUT_SECONDS,
        minimum=1,
        help="Seconds an idle kept-alive connection stays open.",
    ),
    Setting(
        name="max_connections",
        env="AGENT_TASK_MAX_CONNECTIONS",
        flag="--max-connections",
        kind=int,
        default=HTTP_CONNECTIONS_MAX,
        minimum=1,
        help="Connections served at once (lowered to fit the descriptor limit; a few more may "
        "ask for health only).",
    ),
    Setting(
        name="max_body_bytes",
        env="AGENT_TASK_MAX_BODY_BYTES",
        flag="--max-body-bytes",
        kind=int,
        default=HTTP_BODY_BYTES_IN_FLIGHT_MAX,
        minimum=COLLECTOR_ENVELOPE_MAX_BYTES,
        help="Request body bytes all requests may hold at once (503 OVERLOADED beyond).",
    ),
    Setting(
        name="token_rate",
        env="AGENT_TASK_TOKEN_RATE",
        flag="--token-rate",
        kind=float,
        default=float(RATE_TOKEN_CALLS_PER_SECOND),
        minimum=0,
        help="Calls per second one token may make, sustained (0: no limit).",
    ),
    Setting(
        name="token_burst",
        env="AGENT_TASK_TOKEN_BURST",
        flag="--token-burst",
        kind=int,
        default=RATE_TOKEN_CALLS_BURST,
        minimum=1,
        help="Calls one token may make at once.",
    ),
    Setting(
        name="refusal_rate",
        env="AGENT_TASK_REFUSAL_RATE",
        flag="--refusal-rate",
        kind=float,
        default=float(RATE_ADDRESS_REFUSALS_PER_SECOND),
        minimum=0,
        help="Failed authentications per second one client address may cause (0: no limit).",
    ),
    Setting(
        name="refusal_burst",
        env="AGENT_TASK_REFUSAL_BURST",
        flag="--refusal-burst",
        kind=int,
        default=RATE_ADDRESS_REFUSALS_BURST,
        minimum=1,
        help="Failed authentications one client address may cause at once.",
    ),
    Setting(
        name="log_format",
        env="AGENT_TASK_LOG_FORMAT",
        flag="--log-format",
        kind=str,
        default="text",
        choices=LOG_FORMATS,
        help="One line per request on stderr, as key=value text or as JSON.",
    ),
    Setting(
        name="board_secure_cookies",
        env="AGENT_TASK_BOARD_SECURE_COOKIES",
        flag="--board-secure-cookies",
        kind=bool,
        default=False,
        help="Mark board cookies Secure even over plain HTTP (behind a TLS-terminating proxy).",
    ),
    Setting(
        name="session_gate_workspaces",
        env="AGENT_TASK_SESSION_GATE",
        flag="--session-gate-workspace",
        kind=str,
        default=frozenset(),
        many=True,
        help="Let tokens of WORKSPACE ask session_gate about this host's coding-agent sessions "
        "over the network (a single-user host; off by default).",
    ),
    Setting(
        name="public_url",
        env="AGENT_TASK_PUBLIC_URL",
        flag="--public-url",
        kind=str,
        default=None,
        help="Where clients reach this server (https://host[:port], TLS in front): the OAuth "
        "issuer and the MCP resource URLs are named from it. Without it OAuth is offered to "
        "clients on this host only (localhost, 127.0.0.1, [::1]).",
    ),
    Setting(
        name="oauth_allow_private_client_urls",
        env="AGENT_TASK_OAUTH_ALLOW_PRIVATE_CLIENT_URLS",
        flag="--oauth-allow-private-client-urls",
        kind=bool,
        default=False,
        help="Let OAuth clients' metadata documents (client IDs that are https URLs) be fetched "
        "from private and loopback addresses (a server and its clients on one private network).",
    ),
)
"""Every setting of a hosted service, in ``serve --help`` order."""

_BY_NAME = {setting.name: setting for setting in SETTINGS}


LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""Host names a request may use for OAuth without a public URL."""


def public_url_of(url: str | None) -> str | None:
    """Check a public URL (``--public-url``); return it without a trailing slash.

    It is ``https://host[:port]`` (``http`` only for a loopback host), nothing after the
    authority: the OAuth metadata lives at the host's root. Anything else is
    ``INVALID_VALUE``.

    >>> public_url_of("https://tasks.example.com/")
    'https://tasks.example.com'
    >>> public_url_of("https://tasks.example.com/agent-task")
    Traceback (most recent call last):
    taskcore.errors.TaskError: the public URL is scheme://host[:port] with no path, query or fragment (--public-url or AGENT_TASK_PUBLIC_URL)
    """
    if url is None or not url.strip():
        return None
    text = url.strip().rstrip("/")
    parts = urlsplit(text)
    problem = None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problem = "the public URL must be https://host[:port]"
    elif parts.path or parts.query or parts.fragment or parts.username or parts.password:
        problem = "the public URL is scheme://host[:port] with no path, query or fragment"
    elif parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        problem = "the public URL must be https (OAuth needs TLS); put a TLS proxy in front"
    if problem is not None:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{problem} (--public-url or AGENT_TASK_PUBLIC_URL)",
            details={"variable": "AGENT_TASK_PUBLIC_URL"},
        )
    return f"{parts.scheme}://{parts.netloc.lower()}"


def _bounded(instance: HostSettings, attribute: attrs.Attribute[Any], value: Any) -> None:
    setting = _BY_NAME[attribute.name]
    ok = True
    if setting.minimum is not None:
        ok = value >= setting.minimum
    elif setting.choices:
        ok = value in setting.choices
    if not ok:
        raise TaskError(
            ErrorCode.INVALID_VALUE,
            f"{setting.name.replace('_', ' ')} {value!r} is not {setting.describe()} "
            f"({setting.flag} or {setting.env})",
            details={"variable": setting.env},
        )


@attrs.frozen(kw_only=True)
class HostSettings:
    """A hosted service's settings (see :data:`SETTINGS`); :meth:`load` reads them."""

    data_dir: Path
    header_timeout: float = attrs.field(validator=_bounded)
    body_timeout: float = attrs.field(validator=_bounded)
    keepalive_timeout: int = attrs.field(validator=_bounded)
    max_connections: int = attrs.field(validator=_bounded)
    max_body_bytes: int = attrs.field(validator=_bounded)
    token_rate: float = attrs.field(validator=_bounded)
    token_burst: int = attrs.field(validator=_bounded)
    refusal_rate: float = attrs.field(validator=_bounded)
    refusal_burst: int = attrs.field(validator=_bounded)
    log_format: str = attrs.field(validator=_bounded)
    board_secure_cookies: bool
    session_gate_workspaces: frozenset[str]
    public_url: str | None = attrs.field(default=None, converter=public_url_of)
    oauth_allow_private_client_urls: bool = False

    @classmethod
    def load(
        cls,
        *,
        data_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
        **given: Any,
    ) -> HostSettings:
        """The settings: each ``given`` value (a ``serve`` flag), else its variable, else its default.

        A ``given`` value of ``None`` (or an empty tuple, for a repeatable flag) counts as not
        given. ``data_dir`` defaults to ``$AGENT_TASK_DATA_DIR`` or the user data dir;
        ``environ`` to the process's environment. A variable that does not parse, or a value
        out of its bound, is ``INVALID_VALUE`` naming the variable.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            value = given.pop(setting.name, None)
            if value is None or value == ():
                text = env.get(setting.env)
                value = setting.default if text is None else setting.parse(text)
            values[setting.name] = frozenset(value) if setting.many else value
        if given:
            raise TypeError(f"unknown settings: {', '.join(sorted(given))}")
        return cls(data_dir=data_dir or default_data_dir(), **values)

    def rate_limits(self) -> RateLimits:
        """The service's rate limits."""
        return RateLimits(
            token_calls_per_second=self.token_rate,
            token_calls_burst=self.token_burst,
            address_refusals_per_second=self.refusal_rate,
            address_refusals_burst=self.refusal_burst,
        )


def admin_token_command(data_dir: Path) -> str:
    """The command that creates an admin token in ``data_dir``'s journal, exactly.

    Run in the server's environment, so ``AGENT_TASK_DATABASE`` names the same journal (the
    URL, which may hold a password, is never written out here).

    >>> admin_token_command(Path("/srv/agent task"))
    "agent-task admin token create --data-dir '/srv/agent task' --workspace default --tier admin --autonomy 3 --name first-admin"
    """
    return (
        f"agent-task admin token create --data-dir {shlex.quote(str(data_dir))} "
        f"--workspace {FIRST_ADMIN_WORKSPACE} --tier {Tier.ADMIN.wire} "
        f"--autonomy {MAX_AUTONOMY} --name first-admin"
    )


class Host:
    """The service and the workers beside its doors, from :meth:`start` to :meth:`stop`.

    ``first_admin_token`` (``serve``) writes ``DATA_DIR/admin.token`` on a fresh journal;
    ``init`` moves an earlier service's leftovers aside first (``serve --init``).
    """

    def __init__(
        self, settings: HostSettings, *, first_admin_token: bool = False, init: bool = False
    ) -> None:
        self.settings = settings
        self.first_admin_token = first_admin_token
        self.init = init
        self.set_aside: tuple[Path, ...] = ()
        """Files of an earlier service that ``init`` renamed aside (their new paths)."""
        self.admin_token_file: Path | None = None
        """Where the first admin token was written, when this start wrote it."""
        self.has_admin_token = False
        """Whether the journal held a live admin-tier token when the host started."""
        self._service: Service | None = None
        self._schedule: RetentionSchedule | None = None
        self._delivery: ForgeDelivery | None = None
        self._webhooks: WebhookDelivery | None = None
        self._tracer: Tracer | None = None

    @property
    def service(self) -> Service:
        """The running service (after :meth:`start`)."""
        if self._service is None:
            raise TaskError(ErrorCode.BUSY, "the service is not running")
        return self._service

    def prepare(self) -> Host:
        """Open (creating, migrating) the journal, write the first admin token, close it again.

        :meth:`start` does this first; ``serve --workers N`` does it once in the supervisor,
        before its workers start (each then starts a host of its own).
        """
        with TokenAdmin(self.settings.data_dir, create=True, init=self.init) as admin:
            self.set_aside = admin.set_aside
            if self.first_admin_token:
                self.admin_token_file = admin.first_admin_token()
            self.has_admin_token = any(
                record.tier == Tier.ADMIN.wire and record.revoked_at_ms is None
                for record in admin.list()
            )
        return self

    def start(self) -> Host:
        """Open the journal and the service; start the retention sweep and forge delivery."""
        directory = self.settings.data_dir
        self.prepare()
        retention = load_retention_config(directory)
        self._tracer = tracer_from_env()  # None without the [otel] extra: nothing imported
        service = Service.open(
            directory,
            rate_limits=self.settings.rate_limits(),
            session_gate_workspaces=self.settings.session_gate_workspaces,
            tracer=self._tracer,
        )
        self._service = service
        try:
            self._schedule = RetentionSchedule(
                service, retention, gate_index=default_gate_index()
            ).start()
            self._delivery = start_forge_delivery(service)
            self._webhooks = start_webhook_delivery(service)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the workers, then close the service (idempotent)."""
        schedule, self._schedule = self._schedule, None
        delivery, self._delivery = self._delivery, None
        webhooks, self._webhooks = self._webhooks, None
        service, self._service = self._service, None
        tracer, self._tracer = self._tracer, None
        if schedule is not None:
            schedule.stop()
        if delivery is not None:
            delivery.stop()
        if webhooks is not None:
            webhooks.stop()
        if service is not None:
            service.close()
        if tracer is not None:
            tracer.shutdown()  # flush the spans still batched

    def __enter__(self) -> Host:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
