"""Every bound in the system, in one place.

Numbers marked *seed* come from the specification and must not change; the others are ours,
chosen so that a bounded request can always be checked before anything is allocated for it.
Each constant documents its unit. ``docs/contract.md`` lists them in a table.

>>> ASSERTION_MAX_BYTES
262144
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: a Stop hook reads these limits
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "ACTION_HINT_MAX_CHARS",
    "ADMISSION_MEMORY_KEYS_MAX",
    "ADMISSION_MEMORY_MS",
    "ARGV_ITEM_MAX_CHARS",
    "ARGV_MAX",
    "ASSERTION_MAX_BYTES",
    "AUDIT_VERB_MAX_CHARS",
    "BACKOFF_INITIAL_DEFAULT_MS",
    "BACKOFF_MAX_DEFAULT_MS",
    "BACKOFF_MAX_MS",
    "BACKOFF_MULTIPLIER_DEFAULT",
    "BACKOFF_MULTIPLIER_MAX",
    "CAPABILITY_MAX_CHARS",
    "CHECKPOINT_OUTPUTS_MAX_BYTES",
    "CHECKPOINT_PRUNE_DEFAULT_DAYS",
    "CHECKPOINT_PRUNE_MAX_DAYS",
    "CHECKPOINT_STATE_MAX_BYTES",
    "CHECKPOINT_WRITE_BODY_MAX_BYTES",
    "CLAIM_WAITERS_MAX",
    "CLAIM_WAITERS_PER_TOKEN",
    "CLAIM_WAIT_MAX_MS",
    "COLLECTOR_ENVELOPE_MAX_BYTES",
    "COLLECTOR_HEADER_MAX_BYTES",
    "COLLECTOR_RECORD_MAX_BYTES",
    "COLLECTOR_RENEW_MIN_MS",
    "COMMAND_OUTPUT_MAX_BYTES",
    "COMMAND_STREAM_CAP_DEFAULT_BYTES",
    "COMMAND_STREAM_CAP_MAX_BYTES",
    "COMMAND_TIMEOUT_MAX_MS",
    "CONCURRENCY_LIMIT_DEFAULT",
    "CONCURRENCY_LIMIT_MAX",
    "CONTEXT_MAX_BYTES",
    "CREATE_MANY_BODY_MAX_BYTES",
    "CREATE_MANY_MAX",
    "CRITERIA_MAX",
    "DEPENDENCIES_MAX",
    "DONE_GATE_BUDGET",
    "DONE_GATE_RECEIPT_MAX_LINES",
    "DONE_GATE_RUNGS",
    "ENVIRONMENT_ALLOWLIST_MAX",
    "EVENTS_BATCH_MAX",
    "EVENTS_FILTERS_MAX",
    "EVENTS_HEARTBEAT_SECONDS",
    "EVENTS_PATTERN_MAX_CHARS",
    "EVENTS_POLL_MS",
    "EVENTS_STREAMS_MAX",
    "EVENTS_STREAMS_PER_TOKEN",
    "EVENTS_WRITE_TIMEOUT_SECONDS",
    "EVIDENCE_DIGESTS_MAX",
    "EXT_CHILD_KEYS_MAX",
    "EXT_PROMPT_MAX_CHARS",
    "EXT_TITLE_MAX_CHARS",
    "FAILURE_EXCERPT_MAX_BYTES",
    "FINALIZE_TRANSFERS_MAX",
    "FINDINGS_MAX",
    "FINDING_MAX_CHARS",
    "FORGE_ATTEMPTS_MAX",
    "FORGE_BACKOFF_BASE_MS",
    "FORGE_BACKOFF_CAP_MS",
    "FORGE_DESCRIPTION_MAX_CHARS",
    "FORGE_RECHECK_MAX",
    "FORGE_REQUEST_TIMEOUT_SECONDS",
    "FORGE_TARGET_URL_MAX_CHARS",
    "GATE_CHECKS_KEPT",
    "GATE_CODEX_ROLLOUT_WAIT_MS",
    "GATE_DSH_FRAME_MAX_BYTES",
    "GATE_FILES_KEPT",
    "GATE_HOOK_DEADLINE_MS",
    "GATE_HOOK_TIMEOUT_SECONDS",
    "GATE_INDEX_BUSY_MS",
    "GATE_LINE_MAX_BYTES",
    "GATE_MIN_N",
    "GATE_PENDING_MAX",
    "GATE_RECEIPT_LINE_MAX_CHARS",
    "GATE_STDIN_MAX_BYTES",
    "GATE_TEXT_KEPT_CHARS",
    "GIT_TIMEOUT_SECONDS",
    "HTTP_BODY_BYTES_IN_FLIGHT_MAX",
    "HTTP_BODY_TIMEOUT_SECONDS",
    "HTTP_CONNECTIONS_MAX",
    "HTTP_FD_HEADROOM",
    "HTTP_HEADER_EVICT_AFTER_SECONDS",
    "HTTP_HEADER_MAX_BYTES",
    "HTTP_HEADER_TIMEOUT_SECONDS",
    "HTTP_HEALTH_RESERVED_CONNECTIONS",
    "HTTP_KEEPALIVE_TIMEOUT_SECONDS",
    "HTTP_REQUEST_TARGET_MAX_BYTES",
    "ID_MAX_CHARS",
    "JOURNAL_LOW_SPACE_BYTES",
    "JOURNAL_SIZE_LIMIT_BYTES",
    "JSON_MAX_DEPTH",
    "LANDING_SUBJECTS_MAX",
    "LANDING_TIMEOUT_DEFAULT_SECONDS",
    "LANDING_TIMEOUT_MAX_SECONDS",
    "LEASES_HELD_MAX",
    "LEASE_DEFAULT_MS",
    "LEASE_MAX_MS",
    "LEASE_MIN_MS",
    "LEASE_WALLCLOCK_CAP_SECONDS",
    "MATTER_READERS_MAX",
    "MAX_AGENT_TASK_DEPTH",
    "MAX_LEASE_EXTENSIONS",
    "MCP_PROGRESS_INTERVAL_MS",
    "MCP_TASK_POLL_INTERVAL_MS",
    "MCP_TOOL_CALL_MAX_MS",
    "NAMED_REFERENCES_MAX",
    "OBSERVE_ATTEMPTS_MAX",
    "OBSERVE_PAGE_DEFAULT",
    "OBSERVE_PAGE_MAX",
    "OBSERVE_TASK_AUDIT",
    "OBSERVE_TASK_PHASES",
    "PATH_MAX_CHARS",
    "QUALIFICATION_FAILURES_MAX",
    "QUALIFICATION_TIMEOUT_SECONDS",
    "QUEUE_AFTER_MAX",
    "QUEUE_ATTEMPTS_MAX",
    "QUEUE_BULK_MAX",
    "QUEUE_DELAY_MAX_MS",
    "QUEUE_KEY_MAX_CHARS",
    "QUEUE_LIST_DEFAULT",
    "QUEUE_LIST_MAX",
    "QUEUE_PAYLOAD_MAX_BYTES",
    "QUEUE_PRIORITY_MAX",
    "QUEUE_PRIORITY_MIN",
    "QUEUE_VERBS_MAX",
    "RATE_ADDRESS_REFUSALS_BURST",
    "RATE_ADDRESS_REFUSALS_PER_SECOND",
    "RATE_KEYS_MAX",
    "RATE_TOKEN_CALLS_BURST",
    "RATE_TOKEN_CALLS_PER_SECOND",
    "REASON_MAX_CHARS",
    "RECOVERY_ITEMS_MAX",
    "REFERENCE_BODY_MAX_BYTES",
    "REFUSAL_TALLY_FLUSH_SECONDS",
    "REFUSAL_TALLY_KEYS_MAX",
    "REQUEST_BODY_MAX_BYTES",
    "REQUIRED_PATHS_MAX",
    "REQUIREMENT_MAX_BYTES",
    "RETAINED_SUBJECT_SCAN_MAX",
    "RETENTION_BATCH_ROWS",
    "RETENTION_MAX_DAYS",
    "RETENTION_MIN_DAYS",
    "RETRY_AFTER_OVERLOADED_SECONDS",
    "RETRY_AFTER_STORAGE_FULL_SECONDS",
    "REVIEW_CALLS_MAX",
    "REVISION_ENTRIES_MAX",
    "RUN_ARGV0_MAX_CHARS",
    "RUN_FAILURES_MAX",
    "RUN_TAIL_MAX_CHARS",
    "SANDBOX_MEMORY_MIN_BYTES",
    "SANDBOX_PROCESSES_MAX",
    "SANDBOX_PROCESSES_MIN",
    "SANDBOX_READ_ONLY_PATHS_MAX",
    "SANDBOX_TMP_DEFAULT_BYTES",
    "SANDBOX_TMP_MIN_BYTES",
    "SCHEMA_VERSIONS_MAX",
    "SESSION_START_DEADLINE_MS",
    "SESSION_START_GOAL_MAX_CHARS",
    "SESSION_START_TASKS_SHOWN",
    "SESSION_START_TIMEOUT_SECONDS",
    "STEPS_MAX",
    "STOP_CONTINUATIONS_MAX",
    "STOP_DIRTY_PATHS_MAX",
    "TARGET_MAX_CHARS",
    "TEXT_MAX_CHARS",
    "U64_MAX",
    "UNIQUE_FOR_MAX_MS",
    "WAKE_POLL_MS",
    "WEBHOOK_BACKOFF_BASE_MS",
    "WEBHOOK_BACKOFF_CAP_MS",
    "WEBHOOK_DESCRIPTION_MAX_CHARS",
    "WEBHOOK_ENDPOINTS_MAX",
    "WEBHOOK_FANOUT_BATCH",
    "WEBHOOK_REQUEST_TIMEOUT_SECONDS",
    "WEBHOOK_RETRY_WINDOW_MS",
    "WEBHOOK_SECRET_BYTES",
    "WEBHOOK_URL_MAX_CHARS",
]

# -- integers ---------------------------------------------------------------------------------
U64_MAX: Final = 2**64 - 1
"""Largest unsigned 64-bit value; every wire integer is in ``0..U64_MAX`` (*seed*)."""

# -- sizes of whole documents (bytes) ---------------------------------------------------------
ASSERTION_MAX_BYTES: Final = 256 * 1024
"""A TaskResultAssertion as it travels, in bytes (*seed*: 256 KiB)."""
REQUEST_BODY_MAX_BYTES: Final = 256 * 1024
"""Any ordinary request body (queue verbs, workflow operations), in bytes (ours, = assertion)."""
REFERENCE_BODY_MAX_BYTES: Final = 128 * 1024
"""A named reference body, refused above this before it is read (*seed*: 128 KiB)."""
COLLECTOR_ENVELOPE_MAX_BYTES: Final = 16 * 1024 * 1024
"""A signed collector transfer envelope (*seed*: 16 MiB)."""
COLLECTOR_HEADER_MAX_BYTES: Final = 64 * 1024
"""The signed header inside a collector transfer, canonical JSON bytes (ours)."""
COLLECTOR_RECORD_MAX_BYTES: Final = 12 * 1024 * 1024
"""One typed record inside a collector transfer, canonical JSON bytes (ours; fits 8 MiB of
output in base64 inside the 16 MiB envelope)."""
COLLECTOR_RENEW_MIN_MS: Final = 1000
"""Least time between lease renewals while ``collect`` runs a command, ms (ours)."""
CHECKPOINT_STATE_MAX_BYTES: Final = 1024 * 1024
"""``agenttask.checkpoint.write`` state JSON (*seed*: 1 MiB)."""
QUEUE_PAYLOAD_MAX_BYTES: Final = 64 * 1024
"""A queue task payload or checkpoint body, canonical JSON bytes (ours)."""
CONTEXT_MAX_BYTES: Final = 64 * 1024
"""Change context bytes bound into a subject (ours)."""
JSON_MAX_DEPTH: Final = 64
"""Nesting depth of any decoded JSON document (ours)."""

# -- strings (characters) ---------------------------------------------------------------------
ID_MAX_CHARS: Final = 128
"""Identifiers and codes: ``[A-Za-z0-9._-]{1,128}`` (*seed*, from the Stop hook rules)."""
PATH_MAX_CHARS: Final = 1024
"""A named-reference path (ours)."""
FINDING_MAX_CHARS: Final = 4096
"""One finding text in a criterion row (ours)."""
REASON_MAX_CHARS: Final = 1024
"""A cancel or reconcile reason (ours)."""
TEXT_MAX_CHARS: Final = 16 * 1024
"""Any other free text field, e.g. an instruction summary (ours)."""
AUDIT_VERB_MAX_CHARS: Final = 128
"""An operation name as recorded in the audit log, even when unknown (ours)."""
CAPABILITY_MAX_CHARS: Final = 128
"""A capability string such as ``agentscm.agent-workflow-tasks/v1`` (ours)."""
ACTION_HINT_MAX_CHARS: Final = 256
"""The fixed retry hint of a schema mismatch (ours; the seed says only "bounded")."""
TARGET_MAX_CHARS: Final = 256
"""A protected target such as ``refs/heads/main`` (ours)."""
ARGV_ITEM_MAX_CHARS: Final = 4096
"""One argument of a pinned collector command (ours)."""

# -- collections (items) ----------------------------------------------------------------------
CRITERIA_MAX: Final = 64
"""Criteria of one task, rows of one assertion (ours)."""
FINDINGS_MAX: Final = 32
"""Findings in one criterion row (ours)."""
EVIDENCE_DIGESTS_MAX: Final = 32
"""Evidence digests in one criterion row (ours)."""
NAMED_REFERENCES_MAX: Final = 32
"""Named references of one instruction entrypoint (ours)."""
STEPS_MAX: Final = 64
"""Steps of one installed requirement (ours)."""
DEPENDENCIES_MAX: Final = 64
"""Dependencies of one step (ours)."""
QUALIFICATION_FAILURES_MAX: Final = 32
"""Typed failures in one qualification answer (*seed*: 32)."""
RUN_FAILURES_MAX: Final = 8
"""Failed collector runs one qualification answer explains (ours; additive field)."""
RUN_TAIL_MAX_CHARS: Final = 1000
"""Characters of a failed run's stdout tail and of its stderr tail shown to people (ours)."""
RUN_ARGV0_MAX_CHARS: Final = 512
"""Characters of a resolved ``argv[0]`` shown to people (ours)."""
STOP_DIRTY_PATHS_MAX: Final = 20
"""Uncommitted paths a task-stop block lists (ours)."""
FINALIZE_TRANSFERS_MAX: Final = 32
"""Transfers streamed by one collector finalization (*seed*: 32)."""
RETAINED_SUBJECT_SCAN_MAX: Final = 4096
"""Retained task identities scanned for an unresolved older subject (*seed*: 4096)."""
SCHEMA_VERSIONS_MAX: Final = 8
"""Schema versions a client may offer or a mismatch may list (ours)."""
RECOVERY_ITEMS_MAX: Final = 8
"""Confirmed effects, unresolved effects or permitted actions of one recovery envelope (ours)."""
ARGV_MAX: Final = 64
"""Arguments of one pinned collector command (ours)."""
ENVIRONMENT_ALLOWLIST_MAX: Final = 64
"""Environment variable names a pinned collector command lets through (ours)."""
REQUIRED_PATHS_MAX: Final = 256
"""Required path coverage entries of one finite-review collector profile (ours)."""
REVIEW_CALLS_MAX: Final = 1000
"""Largest ``max_calls`` budget a finite-review collector profile may pin (ours)."""
COMMAND_TIMEOUT_MAX_MS: Final = 6 * 60 * 60 * 1000
"""Longest command or review run a collector profile may pin, in milliseconds (ours: 6 h)."""
COMMAND_OUTPUT_MAX_BYTES: Final = 8 * 1024 * 1024
"""Largest retained output of one collector command (ours: 8 MiB, inside the 16 MiB envelope)."""
COMMAND_STREAM_CAP_DEFAULT_BYTES: Final = 64 * 1024 * 1024
"""Bytes a command may write to stdout and stderr together before it is killed (ours: 64 MiB)."""
COMMAND_STREAM_CAP_MAX_BYTES: Final = 4 * 1024 * 1024 * 1024
"""Largest stream cap a collector profile may pin (ours: 4 GiB; every byte is hashed)."""
SANDBOX_READ_ONLY_PATHS_MAX: Final = 32
"""Extra host paths a collector profile may expose read-only to its command (ours)."""
SANDBOX_TMP_DEFAULT_BYTES: Final = 256 * 1024 * 1024
"""Size of the sandbox's private ``/tmp`` (a tmpfs) unless the profile pins another (ours)."""
SANDBOX_TMP_MIN_BYTES: Final = 1024 * 1024
"""Smallest private ``/tmp`` a profile may pin (ours: 1 MiB)."""
SANDBOX_MEMORY_MIN_BYTES: Final = 16 * 1024 * 1024
"""Smallest memory limit a profile may pin (ours: 16 MiB; less cannot start an interpreter)."""
SANDBOX_PROCESSES_MIN: Final = 4
"""Smallest process limit a profile may pin (ours: the sandbox's own init counts)."""
SANDBOX_PROCESSES_MAX: Final = 1 << 22
"""Largest process limit a profile may pin (ours: the kernel's PID_MAX_LIMIT)."""

# -- the authority over git (workflow journal) ------------------------------------------------
GIT_TIMEOUT_SECONDS: Final = 120
"""Longest one read-only git subprocess of the authority may run, in seconds (ours)."""
REVISION_ENTRIES_MAX: Final = 1_000_000
"""Files in one commit whose revision is derived; more is refused, not truncated (ours)."""
REQUIREMENT_MAX_BYTES: Final = 1024 * 1024
"""An installed WorkflowRequirement document, in bytes (ours)."""

# -- leases and time --------------------------------------------------------------------------
LEASE_MIN_MS: Final = 1_000
"""Shortest lease a claim may request, in milliseconds (ours)."""
LEASE_DEFAULT_MS: Final = 5 * 60 * 1000
"""Lease granted when a queue claim asks for none, in milliseconds (ours)."""
LEASE_MAX_MS: Final = 60 * 60 * 1000
"""Configured maximum lease, in milliseconds; a claim never gets more (ours)."""
MAX_LEASE_EXTENSIONS: Final = 4
"""Non-terminal renewals before the runaway guard requeues (*seed*: 4)."""
LEASE_WALLCLOCK_CAP_SECONDS: Final = 2 * 60 * 60
"""Wall-clock cap from first lease before the runaway guard requeues (ours: 2 h)."""
MCP_TASK_POLL_INTERVAL_MS: Final = 5_000
"""The ``pollIntervalMs`` an MCP task handle suggests (ours); queue work takes minutes."""
MCP_TOOL_CALL_MAX_MS: Final = 45_000
"""Longest an MCP tool call holds its request before answering ``CALL_TIMED_OUT`` (ours: well
inside the 60 s the TypeScript SDK and Claude Desktop wait, and the 30-60 s Claude Code's HTTP
calls have hit; the waiting ``claimNext`` waits at most 30 s of it)."""
MAX_AGENT_TASK_DEPTH: Final = 5
"""Deepest queue task (root is 0) (*seed*: 5)."""
CHECKPOINT_PRUNE_DEFAULT_DAYS: Final = 30
"""Default retention of ``agenttask.checkpoint.prune`` (*seed*: 30 days)."""
CHECKPOINT_PRUNE_MAX_DAYS: Final = 36_500
"""Largest ``olderThanDays`` a checkpoint prune accepts, in days (ours: 100 years)."""

# -- agent task queue -------------------------------------------------------------------------
QUEUE_PRIORITY_MIN: Final = -(2**31)
"""Lowest queue task priority (ours: signed 32-bit)."""
QUEUE_PRIORITY_MAX: Final = 2**31 - 1
"""Highest queue task priority (ours: signed 32-bit)."""
QUEUE_LIST_DEFAULT: Final = 100
"""Tasks or feed entries returned by one ``agenttask.list``/``feed`` page by default (ours)."""
QUEUE_LIST_MAX: Final = 1000
"""Most tasks or feed entries one ``agenttask.list``/``feed`` page may return (ours)."""
LEASES_HELD_MAX: Final = 20
"""Leases one ``agenttask.leases`` answer lists; ``more`` says the caller holds others (ours)."""
CHECKPOINT_OUTPUTS_MAX_BYTES: Final = 256 * 1024
"""``agenttask.checkpoint.write`` outputs array, compact JSON bytes (ours)."""
CHECKPOINT_WRITE_BODY_MAX_BYTES: Final = (
    CHECKPOINT_STATE_MAX_BYTES + CHECKPOINT_OUTPUTS_MAX_BYTES + 64 * 1024
)
"""Request body of ``agenttask.checkpoint.write``: state + outputs + envelope, bytes (ours)."""
QUEUE_VERBS_MAX: Final = 1024
"""Carrier verbs an admin may register in one workspace (ours)."""
CLAIM_WAIT_MAX_MS: Final = 30_000
"""Longest ``waitMs`` of a waiting ``agenttask.claimNext``, in milliseconds (ours, issue 28)."""
CLAIM_WAITERS_PER_TOKEN: Final = 256
"""Waiting claims one token may hold open on one server at once; more is refused (ours)."""
CLAIM_WAITERS_MAX: Final = 4096
"""Waiting claims one server holds open at once; more is refused (ours)."""
WAKE_POLL_MS: Final = 5
"""How often a SQLite journal is checked for other processes' commits while someone waits (ours)."""
MCP_PROGRESS_INTERVAL_MS: Final = 5_000
"""How often a waiting MCP tool call reports progress to a client that asked (ours; <= 10 s)."""
QUEUE_DELAY_MAX_MS: Final = 365 * 24 * 60 * 60 * 1000
"""Longest ``delayMs`` (and furthest ``runAt`` ahead) of a queue task, in milliseconds (ours)."""
QUEUE_ATTEMPTS_MAX: Final = 1000
"""Largest ``maxAttempts`` of a queue task (ours)."""
BACKOFF_INITIAL_DEFAULT_MS: Final = 1_000
"""Back-off before the first retry when ``backoff`` is not given, in milliseconds (ours)."""
BACKOFF_MAX_DEFAULT_MS: Final = 60 * 60 * 1000
"""Longest back-off when ``backoff`` is not given, in milliseconds (ours)."""
BACKOFF_MULTIPLIER_DEFAULT: Final = 2.0
"""Growth of the back-off per attempt when ``backoff`` is not given (ours)."""
BACKOFF_MAX_MS: Final = 7 * 24 * 60 * 60 * 1000
"""Largest ``backoff.initialMs`` / ``backoff.maxMs``, in milliseconds (ours)."""
BACKOFF_MULTIPLIER_MAX: Final = 100.0
"""Largest ``backoff.multiplier`` (ours)."""
QUEUE_KEY_MAX_CHARS: Final = 256
"""Longest ``uniqueKey`` or ``concurrencyKey`` (ours)."""
UNIQUE_FOR_MAX_MS: Final = 365 * 24 * 60 * 60 * 1000
"""Longest ``uniqueFor`` window past a task's end, in milliseconds (ours)."""
CONCURRENCY_LIMIT_DEFAULT: Final = 1
"""Leased tasks a ``concurrencyKey`` admits until ``agenttask.limit.set`` says otherwise (ours)."""
CONCURRENCY_LIMIT_MAX: Final = 100_000
"""Largest ``max`` of ``agenttask.limit.set`` (ours)."""
QUEUE_AFTER_MAX: Final = 32
"""Tasks one queue task may wait for (``after``) (ours, issue 28: 32)."""
CREATE_MANY_MAX: Final = 500
"""Tasks one ``agenttask.createMany`` creates, all or nothing (ours, issue 28: 500)."""
CREATE_MANY_BODY_MAX_BYTES: Final = 8 * 1024 * 1024
"""Request body of ``agenttask.createMany``, bytes (ours)."""
QUEUE_BULK_MAX: Final = 1000
"""Tasks one bulk requeue or cancel changes; the answer says whether more match (ours)."""
MATTER_READERS_MAX: Final = 1024
"""Readers granted on one matter (ours)."""
EXT_TITLE_MAX_CHARS: Final = 1024
"""An ext row's title, in characters (ours)."""
EXT_PROMPT_MAX_CHARS: Final = 64 * 1024
"""An ext row's prompt, in characters (ours)."""
EXT_CHILD_KEYS_MAX: Final = 256
"""``declaredChildKeys`` of one ``agenttask.ext.setWaiting`` (ours)."""
QUALIFICATION_TIMEOUT_SECONDS: Final = 30
"""Stop hook limit on the qualification call (*seed*: 30 s)."""
STOP_CONTINUATIONS_MAX: Final = 8
"""Consecutive task-stop continuations before the counter ends continuation (*seed*: 8)."""

# -- done gate --------------------------------------------------------------------------------
DONE_GATE_BUDGET: Final = 3
"""Re-entries per session and user prompt (*seed*: 3)."""
DONE_GATE_RECEIPT_MAX_LINES: Final = 6
"""Lines in a done-gate receipt (*seed*: 6)."""
DONE_GATE_RUNGS: Final = 5
"""The top rung of the evidence ladder (*seed*: "rung 2 of 5")."""
GATE_MIN_N: Final = 20
"""Groups smaller than this are printed with their n and flagged, never as a rate (*seed*)."""
GATE_RECEIPT_LINE_MAX_CHARS: Final = 100
"""Characters in one receipt line (ours)."""
GATE_STDIN_MAX_BYTES: Final = 4 * 1024 * 1024
"""A Stop hook payload read from stdin; more is refused and the stop allowed (ours)."""
GATE_LINE_MAX_BYTES: Final = 64 * 1024 * 1024
"""One transcript line; a longer line is skipped, counted and never buffered whole (ours)."""
GATE_DSH_FRAME_MAX_BYTES: Final = 256 * 1024 * 1024
"""Decompressed bytes of one dsh Zstandard frame (one append batch); past it the frame is not
decoded and the read stops there (ours)."""
GATE_HOOK_DEADLINE_MS: Final = 8_000
"""The Stop hook's own deadline; past it the stop is allowed with one line (ours)."""
GATE_CODEX_ROLLOUT_WAIT_MS: Final = 2_000
"""Longest wait of a Codex Stop hook for the rollout to hold the turn's last message (ours:
Codex writes its rollout on a background task; :func:`taskcore.donegate.light.wait_for_rollout`)."""
GATE_HOOK_TIMEOUT_SECONDS: Final = 30
"""The timeout the installer writes for the harness, well above the deadline (ours)."""
GATE_INDEX_BUSY_MS: Final = 1_500
"""How long the hook waits for a locked gate index before it fails open (ours)."""
SESSION_START_DEADLINE_MS: Final = 5_000
"""The SessionStart hook's own deadline for the service's answer; past it one line (ours)."""
SESSION_START_TIMEOUT_SECONDS: Final = 15
"""The timeout ``agent setup`` writes for the SessionStart hook, above its deadline (ours)."""
SESSION_START_TASKS_SHOWN: Final = 5
"""Held tasks the SessionStart context describes one by one; the rest are counted (ours)."""
SESSION_START_GOAL_MAX_CHARS: Final = 300
"""Characters of a task's goal the SessionStart context quotes (ours)."""
GATE_PENDING_MAX: Final = 512
"""Tool calls awaiting a result kept in one session's reader state (ours)."""
GATE_CHECKS_KEPT: Final = 64
"""Resolved check records kept in one session's reader state (ours)."""
GATE_FILES_KEPT: Final = 1024
"""Distinct written paths remembered per session; beyond it only the count grows (ours)."""
GATE_TEXT_KEPT_CHARS: Final = 4096
"""Characters of the last assistant message kept for the done-claim test (ours)."""

# -- operator reads and retention (ours) ------------------------------------------------------
OBSERVE_PAGE_DEFAULT: Final = 50
"""Rows in one page of an operator read (``observe.*``) when ``limit`` is not given (ours)."""
OBSERVE_PAGE_MAX: Final = 200
"""The largest ``limit`` an operator read accepts (ours)."""
OBSERVE_TASK_PHASES: Final = 20
"""Newest phase checkpoints shown with one queue task (ours)."""
OBSERVE_TASK_AUDIT: Final = 50
"""Newest audit events shown with one queue task (ours)."""
OBSERVE_ATTEMPTS_MAX: Final = 32
"""Newest attempts shown per workflow task; more are counted, not listed (ours)."""
FAILURE_EXCERPT_MAX_BYTES: Final = 4096
"""Bytes of a failed command's retained output shown as its failure excerpt (ours)."""
RETENTION_BATCH_ROWS: Final = 2000
"""Rows one retention transaction deletes at most, so writers wait only briefly (ours)."""
RETENTION_MIN_DAYS: Final = 1
"""The shortest age any retention table accepts, in days (ours)."""
RETENTION_MAX_DAYS: Final = 36_500
"""The longest age a retention table accepts, in days (ours: 100 years)."""

# -- landing and forge statuses ---------------------------------------------------------------
LANDING_SUBJECTS_MAX: Final = 16
"""Subjects of one pushed revision the landing recheck considers, newest first (ours)."""
LANDING_TIMEOUT_DEFAULT_SECONDS: Final = 10
"""How long the pre-receive hook waits for the authority by default (ours)."""
LANDING_TIMEOUT_MAX_SECONDS: Final = 120
"""The longest wait ``agent-task landing install --timeout`` accepts (ours)."""
FORGE_DESCRIPTION_MAX_CHARS: Final = 140
"""Characters of a commit status description (GitHub's limit; GitLab allows 255)."""
FORGE_TARGET_URL_MAX_CHARS: Final = 255
"""Characters of a commit status target_url (GitLab's limit); a longer one is left out."""
FORGE_ATTEMPTS_MAX: Final = 10
"""Delivery attempts of one status before it is given up (ours)."""
FORGE_BACKOFF_BASE_MS: Final = 2_000
"""The first retry delay of a status delivery; each retry doubles it (ours)."""
FORGE_BACKOFF_CAP_MS: Final = 300_000
"""The longest retry delay of a status delivery, and of a 429's Retry-After (ours)."""
FORGE_REQUEST_TIMEOUT_SECONDS: Final = 10
"""How long one status delivery waits for the forge (ours)."""
FORGE_RECHECK_MAX: Final = 256
"""Published success statuses a revocation rechecks, newest first (ours)."""
# -- the network service (``agent-task serve``; each has a flag, see docs/adapters.md) ---------
HTTP_HEADER_TIMEOUT_SECONDS: Final = 10
"""Longest time a connection may take to send one request's headers, seconds (ours)."""
HTTP_HEADER_MAX_BYTES: Final = 16 * 1024
"""Largest request line and headers of one request, bytes (ours; h11's default bound); past it
431 ``HEADERS_TOO_LARGE``."""
HTTP_REQUEST_TARGET_MAX_BYTES: Final = 8 * 1024
"""Largest request target (the URL of the request line), bytes (ours; Apache's
``LimitRequestLine`` is 8190, nginx's header buffer 8 KiB); past it 414 ``URI_TOO_LONG``."""
HTTP_BODY_TIMEOUT_SECONDS: Final = 120
"""Longest time a request may take to send its whole body once its headers are in, seconds
(ours: 16 MiB at about 140 KB/s)."""
HTTP_KEEPALIVE_TIMEOUT_SECONDS: Final = 5
"""Longest idle time of a kept-alive connection between requests, seconds (ours)."""
HTTP_CONNECTIONS_MAX: Final = 1000
"""Open HTTP connections served at once; lowered at start to fit the descriptor limit (ours)."""
HTTP_FD_HEADROOM: Final = 160
"""File descriptors kept out of the connection cap for the journal, threads and logs (ours)."""
HTTP_HEALTH_RESERVED_CONNECTIONS: Final = 4
"""Connections accepted beyond the cap that may only ask ``GET /v1/hub/health`` (ours)."""
HTTP_HEADER_EVICT_AFTER_SECONDS: Final = 1.0
"""At the cap, a connection still sending its headers after this long is closed to make room
for a new one, oldest first (ours)."""
HTTP_BODY_BYTES_IN_FLIGHT_MAX: Final = 64 * 1024 * 1024
"""Request body bytes held by all requests together; more is 503 ``OVERLOADED`` (ours)."""
ADMISSION_MEMORY_MS: Final = 1000
"""How long a bearer the service admitted may be admitted again from memory, without a
storage read, before a request's body is read; the call still authenticates it in its own
transaction (ours)."""
ADMISSION_MEMORY_KEYS_MAX: Final = 4096
"""Bearers remembered as recently admitted, at most (ours)."""
RATE_TOKEN_CALLS_PER_SECOND: Final = 200.0
"""Calls one token may make per second, sustained, over the network (ours)."""
RATE_TOKEN_CALLS_BURST: Final = 2000
"""Calls one token may make at once before the sustained rate applies (ours)."""
RATE_ADDRESS_REFUSALS_PER_SECOND: Final = 5.0
"""Failed authentications one client address may cause per second, sustained (ours)."""
RATE_ADDRESS_REFUSALS_BURST: Final = 100
"""Failed authentications one client address may cause at once (ours)."""
RATE_KEYS_MAX: Final = 16_384
"""Client addresses or tokens a rate limiter tracks; the least recently seen is forgotten
(ours)."""
REFUSAL_TALLY_FLUSH_SECONDS: Final = 5.0
"""How often aggregated anonymous and rate-limited refusals are written to the audit log,
seconds (ours)."""
REFUSAL_TALLY_KEYS_MAX: Final = 1024
"""Distinct (actor, workspace, operation, outcome) keys one tally holds before the rest fold
into one overflow key (ours)."""
RETRY_AFTER_STORAGE_FULL_SECONDS: Final = 30
"""``Retry-After`` of a ``STORAGE_FULL`` refusal, seconds (ours)."""
RETRY_AFTER_OVERLOADED_SECONDS: Final = 1
"""``Retry-After`` of an ``OVERLOADED`` refusal, seconds (ours)."""

# -- storage ----------------------------------------------------------------------------------
JOURNAL_SIZE_LIMIT_BYTES: Final = 64 * 1024 * 1024
"""SQLite ``journal_size_limit``: the WAL is truncated to this after a checkpoint, bytes (ours)."""
JOURNAL_LOW_SPACE_BYTES: Final = 64 * 1024 * 1024
"""Below this much free space on the journal's file system the WAL is checkpointed after
every commit, so it never holds more than the space can absorb, bytes (ours)."""

# -- OAuth (the authorization server for MCP clients, taskcore.oauth) -------------------------
OAUTH_ACCESS_TOKEN_MS: Final = 60 * 60 * 1000
"""How long an OAuth access token is valid, milliseconds (ours: one hour)."""
OAUTH_REFRESH_TOKEN_MS: Final = 30 * 24 * 60 * 60 * 1000
"""How long an OAuth refresh token is valid from its issue, milliseconds (ours: 30 days;
each refresh rotates it and starts a new one)."""
OAUTH_CODE_MS: Final = 5 * 60 * 1000
"""How long an authorization code is valid, milliseconds (ours; RFC 6749 10.5 recommends at
most ten minutes)."""
OAUTH_REQUEST_MS: Final = 15 * 60 * 1000
"""How long a pending authorization request waits for consent, milliseconds (ours)."""
OAUTH_PENDING_REQUESTS_MAX: Final = 256
"""Pending authorization requests at once (the authorize endpoint is unauthenticated; ours)."""
OAUTH_CLIENTS_MAX: Final = 4096
"""Registered and metadata-document clients kept at once (registration is unauthenticated;
clients without a grant older than a day are dropped first; ours)."""
OAUTH_CLIENT_METADATA_MAX_BYTES: Final = 16 * 1024
"""The largest client metadata: a registration body or a fetched metadata document (ours)."""
OAUTH_CLIENT_METADATA_TIMEOUT_SECONDS: Final = 5.0
"""How long fetching a client ID metadata document may take in all, seconds (ours)."""
OAUTH_CLIENT_METADATA_REFRESH_MS: Final = 60 * 60 * 1000
"""A fetched client ID metadata document is fetched again after this long, milliseconds
(ours)."""
OAUTH_TEXT_MAX_CHARS: Final = 2048
"""The longest URL, scope, state or client name an OAuth request may carry (ours)."""
# -- the event stream and webhooks (issue 25) --------------------------------------------------
EVENTS_STREAMS_PER_TOKEN: Final = 4
"""``GET /v1/events`` connections one token may hold open at once (ours)."""
EVENTS_STREAMS_MAX: Final = 256
"""``GET /v1/events`` connections one server holds open at once; more is 503 (ours)."""
EVENTS_HEARTBEAT_SECONDS: Final = 15
"""A stream with nothing to send sends a comment this often, seconds (ours)."""
EVENTS_BATCH_MAX: Final = 100
"""Events a stream reads from the journal at once, before it has written them (ours)."""
EVENTS_WRITE_TIMEOUT_SECONDS: Final = 60
"""A stream whose reader does not take a batch within this long is closed, seconds (ours)."""
EVENTS_POLL_MS: Final = 1000
"""How often a stream looks again when no commit woke it, ms (ours). Commits wake it (this
process's, and other replicas' through the storage's wake-ups); the look covers a PostgreSQL
horizon that waited for a transaction open elsewhere in the cluster, whose end no commit of
the journal announces."""
EVENTS_FILTERS_MAX: Final = 16
"""Operation patterns one stream or one webhook endpoint may name (ours)."""
EVENTS_PATTERN_MAX_CHARS: Final = 128
"""Characters of one operation pattern (``agenttask.*``) (ours)."""
WEBHOOK_URL_MAX_CHARS: Final = 2048
"""Characters of a webhook endpoint's URL (ours)."""
WEBHOOK_DESCRIPTION_MAX_CHARS: Final = 256
"""Characters of a webhook endpoint's description (ours)."""
WEBHOOK_ENDPOINTS_MAX: Final = 32
"""Live webhook endpoints one workspace may have (ours)."""
WEBHOOK_SECRET_BYTES: Final = 32
"""Random bytes of a generated ``whsec_`` signing secret (ours; Standard Webhooks asks for
24 to 64)."""
WEBHOOK_RETRY_WINDOW_MS: Final = 24 * 60 * 60 * 1000
"""How long a webhook delivery is retried before it is dead, ms (ours)."""
WEBHOOK_BACKOFF_BASE_MS: Final = 5_000
"""The first retry delay of a webhook delivery; each retry doubles it (ours)."""
WEBHOOK_BACKOFF_CAP_MS: Final = 60 * 60 * 1000
"""The longest retry delay of a webhook delivery, and of a 429's Retry-After, ms (ours)."""
WEBHOOK_REQUEST_TIMEOUT_SECONDS: Final = 15
"""How long one webhook delivery waits for the receiver's answer, seconds (ours)."""
WEBHOOK_FANOUT_BATCH: Final = 500
"""Events the webhook fan-out turns into deliveries per transaction (ours)."""
