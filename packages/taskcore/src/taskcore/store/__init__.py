"""Storage: the only package with SQL. See :mod:`taskcore.store.storage` for the interface."""

from taskcore.store.audit_api import AuditEvent, AuditStore
from taskcore.store.sqlite import Component, Migration, SqliteDatabase
from taskcore.store.storage import (
    JOURNAL_FILENAME,
    SqliteStorage,
    SqliteTransaction,
    Storage,
    Transaction,
    open_storage,
)
from taskcore.store.tokens_api import TokenRecord, TokenStore

__all__ = [
    "JOURNAL_FILENAME",
    "AuditEvent",
    "AuditStore",
    "Component",
    "Migration",
    "SqliteDatabase",
    "SqliteStorage",
    "SqliteTransaction",
    "Storage",
    "TokenRecord",
    "TokenStore",
    "Transaction",
    "open_storage",
]
