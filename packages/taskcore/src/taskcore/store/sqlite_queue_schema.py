"""The queue component's SQLite schema: its forward-only migrations (``COMPONENT``).

``queue_task`` carries the seed's terminal backstop as a ``CHECK``: ``finished_at_ms`` is set
if and only if the status is ``DONE``, ``FAILED`` or ``CANCELLED``; and the lease lifecycle is
all-or-nothing (a lease owner exactly when ``LEASED``). The PostgreSQL twin is
:mod:`taskcore.store.postgres.migrations_queue`; a change here is a new migration in both.
"""

from __future__ import annotations

from taskcore.store.sqlite import Component, Migration

__all__ = ["COMPONENT"]

COMPONENT = Component(
    "queue",
    (
        Migration(
            1,
            """
            CREATE TABLE queue_task (
                seq INTEGER PRIMARY KEY,
                task_id TEXT NOT NULL UNIQUE,
                workspace TEXT NOT NULL,
                verb TEXT NOT NULL,
                payload_json TEXT,
                status TEXT NOT NULL CHECK (status IN
                    ('QUEUED', 'LEASED', 'ESCALATED', 'DONE', 'FAILED', 'CANCELLED')),
                priority INTEGER NOT NULL,
                autonomy_ceiling INTEGER NOT NULL CHECK (autonomy_ceiling BETWEEN 0 AND 3),
                depth INTEGER NOT NULL CHECK (depth BETWEEN 0 AND 5),
                parent_task_id TEXT,
                run_id TEXT,
                matter_id TEXT,
                matter_step_id TEXT,
                created_by TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL,
                finished_at_ms INTEGER,
                lease_owner TEXT,
                lease_expires_at_ms INTEGER,
                heartbeat_at_ms INTEGER,
                lease_extensions INTEGER NOT NULL CHECK (lease_extensions >= 0),
                first_leased_at_ms INTEGER,
                fence INTEGER NOT NULL CHECK (fence >= 0),
                exercised_autonomy INTEGER,
                checkpoint_json TEXT,
                last_error TEXT,
                escalation_gate_id TEXT,
                version INTEGER NOT NULL,
                CHECK ((status IN ('DONE', 'FAILED', 'CANCELLED')) = (finished_at_ms IS NOT NULL)),
                CHECK ((status = 'LEASED') = (lease_owner IS NOT NULL)),
                CHECK ((lease_owner IS NULL) = (lease_expires_at_ms IS NULL)),
                CHECK ((lease_owner IS NULL) = (first_leased_at_ms IS NULL))
            ) STRICT;
            CREATE INDEX queue_task_ready ON queue_task
                (workspace, autonomy_ceiling, priority DESC, created_at_ms, seq)
                WHERE status = 'QUEUED';
            CREATE INDEX queue_task_ready_verb ON queue_task
                (workspace, verb, autonomy_ceiling, priority DESC, created_at_ms, seq)
                WHERE status = 'QUEUED';
            CREATE INDEX queue_task_leases ON queue_task (workspace, lease_expires_at_ms)
                WHERE status = 'LEASED';
            CREATE INDEX queue_task_workspace ON queue_task (workspace, seq);
            CREATE INDEX queue_task_status ON queue_task (workspace, status, seq);
            CREATE INDEX queue_task_matter ON queue_task (workspace, matter_id, seq);

            CREATE TABLE queue_verb (
                workspace TEXT NOT NULL,
                verb TEXT NOT NULL,
                description TEXT NOT NULL,
                registered_by TEXT NOT NULL,
                registered_at_ms INTEGER NOT NULL,
                PRIMARY KEY (workspace, verb)
            ) STRICT;

            CREATE TABLE queue_matter (
                workspace TEXT NOT NULL,
                matter_id TEXT NOT NULL,
                objective TEXT,
                created_by TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                PRIMARY KEY (workspace, matter_id)
            ) STRICT;

            CREATE TABLE queue_matter_reader (
                workspace TEXT NOT NULL,
                matter_id TEXT NOT NULL,
                reader TEXT NOT NULL,
                granted_by TEXT NOT NULL,
                granted_at_ms INTEGER NOT NULL,
                PRIMARY KEY (workspace, matter_id, reader),
                FOREIGN KEY (workspace, matter_id) REFERENCES queue_matter (workspace, matter_id)
            ) STRICT;

            CREATE TABLE queue_approval_gate (
                gate_id TEXT PRIMARY KEY,
                workspace TEXT NOT NULL,
                task_id TEXT NOT NULL REFERENCES queue_task (task_id),
                target_verb TEXT,
                input_hash TEXT,
                reason TEXT,
                status TEXT NOT NULL CHECK (status IN
                    ('PENDING', 'APPROVED', 'REJECTED', 'CONSUMED', 'VOIDED')),
                requested_by TEXT NOT NULL,
                requested_at_ms INTEGER NOT NULL,
                decided_by TEXT,
                decided_at_ms INTEGER,
                decision_note TEXT,
                consumed_by TEXT,
                consumed_at_ms INTEGER,
                consumed_fence INTEGER,
                version INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX queue_approval_gate_task ON queue_approval_gate (workspace, task_id);

            CREATE TABLE queue_checkpoint (
                seq INTEGER PRIMARY KEY,
                workspace TEXT NOT NULL,
                task_id TEXT NOT NULL REFERENCES queue_task (task_id),
                phase_index INTEGER NOT NULL CHECK (phase_index >= 0),
                phase_key TEXT NOT NULL,
                state_json TEXT NOT NULL,
                outputs_json TEXT NOT NULL,
                written_by TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                UNIQUE (task_id, phase_index)
            ) STRICT;
            CREATE INDEX queue_checkpoint_created ON queue_checkpoint (created_at_ms);

            CREATE TABLE queue_task_ext (
                agent_task_id TEXT PRIMARY KEY REFERENCES queue_task (task_id),
                workspace TEXT NOT NULL,
                title TEXT NOT NULL,
                prompt TEXT NOT NULL,
                source_type TEXT NOT NULL,
                source_id TEXT,
                source_matter_id TEXT,
                source_step_id TEXT,
                child_key TEXT,
                priority INTEGER NOT NULL,
                requires_human_review INTEGER NOT NULL CHECK (requires_human_review IN (0, 1)),
                waiting_for_children INTEGER NOT NULL CHECK (waiting_for_children IN (0, 1)),
                declared_child_keys_json TEXT NOT NULL,
                claim_token_hash TEXT CHECK (claim_token_hash IS NULL OR
                    (length(claim_token_hash) = 64 AND claim_token_hash NOT GLOB '*[^0-9a-f]*')),
                claimed_at_ms INTEGER,
                cost_usd REAL,
                duration_ms INTEGER,
                tool_call_count INTEGER,
                result_json TEXT,
                progress_text TEXT,
                created_at_ms INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL
            ) STRICT;
            """,
        ),
        Migration(
            2,
            # Only matter tasks need an entry: listing a matter's tasks reads it, listing the
            # tasks outside any matter reads queue_task_workspace. One page fewer per create.
            """
            DROP INDEX queue_task_matter;
            CREATE INDEX queue_task_matter ON queue_task (workspace, matter_id, seq)
                WHERE matter_id IS NOT NULL;
            """,
        ),
        Migration(
            3,
            # Only settled tasks (escalated or terminal) need an entry: a listing by status
            # QUEUED reads queue_task_workspace (an expired lease is QUEUED too), one by LEASED
            # queue_task_leases, as they did before. One page fewer per create and per claim.
            # The predicate is written as ORs, the form SQLite's planner proves `status = ?`
            # (a bound settled status) implies.
            """
            DROP INDEX queue_task_status;
            CREATE INDEX queue_task_status ON queue_task (workspace, status, seq)
                WHERE status = 'ESCALATED' OR status = 'DONE' OR status = 'FAILED'
                    OR status = 'CANCELLED';
            """,
        ),
        Migration(
            4,
            # The wake-up counter: bumped in every transaction that may make a task of the
            # workspace claimable, read by other processes' watches (store/sqlite_wakeup.py).
            """
            CREATE TABLE queue_signal (
                workspace TEXT PRIMARY KEY,
                generation INTEGER NOT NULL CHECK (generation >= 1)
            ) STRICT;
            """,
        ),
        Migration(
            5,
            # Scheduled tasks, retries and paused verbs (docs/queue.md "Scheduled tasks",
            # "Retries", "Pause"): a task is not claimable before run_at_ms; attempt counts
            # from 1 up to max_attempts (1: no retry, the seed's behaviour); retry_delay_ms is
            # the jittered back-off drawn at claim for the lease lapsing; queue_paused_verb
            # holds the carrier verbs claimNext skips. queue_task_scheduled finds the next due;
            # the ready indexes end with run_at_ms, so the claim's due check stays covered.
            """
            ALTER TABLE queue_task ADD COLUMN run_at_ms INTEGER;
            ALTER TABLE queue_task ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1
                CHECK (attempt >= 1);
            ALTER TABLE queue_task ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 1
                CHECK (max_attempts >= 1);
            ALTER TABLE queue_task ADD COLUMN backoff_initial_ms INTEGER NOT NULL DEFAULT 1000;
            ALTER TABLE queue_task ADD COLUMN backoff_max_ms INTEGER NOT NULL DEFAULT 3600000;
            ALTER TABLE queue_task ADD COLUMN backoff_multiplier REAL NOT NULL DEFAULT 2.0;
            ALTER TABLE queue_task ADD COLUMN retry_delay_ms INTEGER NOT NULL DEFAULT 0
                CHECK (retry_delay_ms >= 0);
            CREATE INDEX queue_task_scheduled ON queue_task (workspace, run_at_ms)
                WHERE status = 'QUEUED' AND run_at_ms IS NOT NULL;
            DROP INDEX queue_task_ready;
            CREATE INDEX queue_task_ready ON queue_task
                (workspace, autonomy_ceiling, priority DESC, created_at_ms, seq, run_at_ms)
                WHERE status = 'QUEUED';
            DROP INDEX queue_task_ready_verb;
            CREATE INDEX queue_task_ready_verb ON queue_task
                (workspace, verb, autonomy_ceiling, priority DESC, created_at_ms, seq, run_at_ms)
                WHERE status = 'QUEUED';
            CREATE TABLE queue_paused_verb (
                workspace TEXT NOT NULL,
                verb TEXT NOT NULL,
                paused_by TEXT NOT NULL,
                paused_at_ms INTEGER NOT NULL,
                PRIMARY KEY (workspace, verb)
            ) STRICT;
            """,
        ),
    ),
)
