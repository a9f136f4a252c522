"""The PostgreSQL backend: ``agent-task serve --database postgresql://...`` (docs/deploy.md).

:class:`~taskcore.store.postgres.storage.PostgresStorage` implements ``store.storage.Storage``;
``stores.py`` holds the domain stores (the SQLite stores' statements, translated by
``connection.py``, with PostgreSQL's own claim and locks); ``migrations.py`` the schema.
Importing this package imports psycopg; nothing imports it unless a ``postgresql://``
database is opened.
"""
