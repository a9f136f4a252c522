"""Every bound in the system, in one place.

Numbers marked *seed* come from the specification and must not change; the others are ours,
chosen so that a bounded request can always be checked before anything is allocated for it.
Each constant documents its unit. ``docs/contract.md`` lists them in a table.

>>> ASSERTION_MAX_BYTES
262144
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ACTION_HINT_MAX_CHARS",
    "ARGV_ITEM_MAX_CHARS",
    "ARGV_MAX",
    "ASSERTION_MAX_BYTES",
    "AUDIT_VERB_MAX_CHARS",
    "CAPABILITY_MAX_CHARS",
    "CHECKPOINT_OUTPUTS_MAX_BYTES",
    "CHECKPOINT_PRUNE_DEFAULT_DAYS",
    "CHECKPOINT_PRUNE_MAX_DAYS",
    "CHECKPOINT_STATE_MAX_BYTES",
    "CHECKPOINT_WRITE_BODY_MAX_BYTES",
    "COLLECTOR_ENVELOPE_MAX_BYTES",
    "COLLECTOR_HEADER_MAX_BYTES",
    "COLLECTOR_RECORD_MAX_BYTES",
    "COLLECTOR_RENEW_MIN_MS",
    "COMMAND_OUTPUT_MAX_BYTES",
    "COMMAND_TIMEOUT_MAX_MS",
    "CONTEXT_MAX_BYTES",
    "CRITERIA_MAX",
    "DEPENDENCIES_MAX",
    "DONE_GATE_BUDGET",
    "DONE_GATE_RECEIPT_MAX_LINES",
    "DONE_GATE_RUNGS",
    "ENVIRONMENT_ALLOWLIST_MAX",
    "EVIDENCE_DIGESTS_MAX",
    "EXT_CHILD_KEYS_MAX",
    "EXT_PROMPT_MAX_CHARS",
    "EXT_TITLE_MAX_CHARS",
    "FINALIZE_TRANSFERS_MAX",
    "FINDINGS_MAX",
    "FINDING_MAX_CHARS",
    "GATE_CHECKS_KEPT",
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
    "ID_MAX_CHARS",
    "JSON_MAX_DEPTH",
    "LEASE_DEFAULT_MS",
    "LEASE_MAX_MS",
    "LEASE_MIN_MS",
    "LEASE_WALLCLOCK_CAP_SECONDS",
    "MATTER_READERS_MAX",
    "MAX_AGENT_TASK_DEPTH",
    "MAX_LEASE_EXTENSIONS",
    "NAMED_REFERENCES_MAX",
    "PATH_MAX_CHARS",
    "QUALIFICATION_FAILURES_MAX",
    "QUALIFICATION_TIMEOUT_SECONDS",
    "QUEUE_LIST_DEFAULT",
    "QUEUE_LIST_MAX",
    "QUEUE_PAYLOAD_MAX_BYTES",
    "QUEUE_PRIORITY_MAX",
    "QUEUE_PRIORITY_MIN",
    "QUEUE_VERBS_MAX",
    "REASON_MAX_CHARS",
    "RECOVERY_ITEMS_MAX",
    "REFERENCE_BODY_MAX_BYTES",
    "REQUEST_BODY_MAX_BYTES",
    "REQUIRED_PATHS_MAX",
    "REQUIREMENT_MAX_BYTES",
    "RETAINED_SUBJECT_SCAN_MAX",
    "REVIEW_CALLS_MAX",
    "REVISION_ENTRIES_MAX",
    "SCHEMA_VERSIONS_MAX",
    "STEPS_MAX",
    "STOP_CONTINUATIONS_MAX",
    "TARGET_MAX_CHARS",
    "TEXT_MAX_CHARS",
    "U64_MAX",
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
CHECKPOINT_OUTPUTS_MAX_BYTES: Final = 256 * 1024
"""``agenttask.checkpoint.write`` outputs array, compact JSON bytes (ours)."""
CHECKPOINT_WRITE_BODY_MAX_BYTES: Final = (
    CHECKPOINT_STATE_MAX_BYTES + CHECKPOINT_OUTPUTS_MAX_BYTES + 64 * 1024
)
"""Request body of ``agenttask.checkpoint.write``: state + outputs + envelope, bytes (ours)."""
QUEUE_VERBS_MAX: Final = 1024
"""Carrier verbs an admin may register in one workspace (ours)."""
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
GATE_HOOK_TIMEOUT_SECONDS: Final = 30
"""The timeout the installer writes for the harness, well above the deadline (ours)."""
GATE_INDEX_BUSY_MS: Final = 1_500
"""How long the hook waits for a locked gate index before it fails open (ours)."""
GATE_PENDING_MAX: Final = 512
"""Tool calls awaiting a result kept in one session's reader state (ours)."""
GATE_CHECKS_KEPT: Final = 64
"""Resolved check records kept in one session's reader state (ours)."""
GATE_FILES_KEPT: Final = 1024
"""Distinct written paths remembered per session; beyond it only the count grows (ours)."""
GATE_TEXT_KEPT_CHARS: Final = 4096
"""Characters of the last assistant message kept for the done-claim test (ours)."""
