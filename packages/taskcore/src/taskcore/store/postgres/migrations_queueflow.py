"""The PostgreSQL DDL of the ``queueflow`` component (the twin of ``store/sqlite_queueflow.py``).

Kept beside :mod:`taskcore.store.postgres.migrations`, which lists it in ``COMPONENTS``, so
that module stays readable; the rules there (``BIGINT``, ``TEXT COLLATE "C"``) apply.
"""

from __future__ import annotations

from taskcore.store.sqlite import Component, Migration

__all__ = ["QUEUEFLOW"]

QUEUEFLOW = Component(
    "queueflow",
    (
        Migration(
            1,
            """
            CREATE TABLE queueflow_task (
                workspace TEXT COLLATE "C" NOT NULL,
                task_id TEXT COLLATE "C" NOT NULL,
                unique_key TEXT COLLATE "C",
                concurrency_key TEXT COLLATE "C",
                has_parents BIGINT NOT NULL CHECK (has_parents IN (0, 1)),
                gated BIGINT NOT NULL CHECK (gated IN (0, 1)),
                PRIMARY KEY (workspace, task_id)
            );
            CREATE INDEX queueflow_task_gated ON queueflow_task(workspace, concurrency_key)
                WHERE gated = 1;
            CREATE TABLE queueflow_unique (
                workspace TEXT COLLATE "C" NOT NULL,
                unique_key TEXT COLLATE "C" NOT NULL,
                task_id TEXT COLLATE "C" NOT NULL,
                unique_for_ms BIGINT NOT NULL CHECK (unique_for_ms >= 0),
                PRIMARY KEY (workspace, unique_key)
            );
            CREATE TABLE queueflow_dep (
                workspace TEXT COLLATE "C" NOT NULL,
                child_id TEXT COLLATE "C" NOT NULL,
                parent_id TEXT COLLATE "C" NOT NULL,
                position BIGINT NOT NULL,
                PRIMARY KEY (workspace, child_id, parent_id)
            );
            CREATE INDEX queueflow_dep_parent ON queueflow_dep(workspace, parent_id);
            CREATE TABLE queueflow_limit (
                workspace TEXT COLLATE "C" NOT NULL,
                concurrency_key TEXT COLLATE "C" NOT NULL,
                max_leased BIGINT NOT NULL CHECK (max_leased >= 0),
                set_by TEXT COLLATE "C" NOT NULL,
                set_at_ms BIGINT NOT NULL,
                PRIMARY KEY (workspace, concurrency_key)
            );
            """,
        ),
    ),
)
