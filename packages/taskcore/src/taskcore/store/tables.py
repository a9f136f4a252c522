"""A row mapper driven by ``attrs.fields``: one :class:`Table` per record type.

The stores used to spell every table three times (a column list, a ``_record(row)`` reader
indexing ``row[0]``, ``row[1]``, ... and an insert naming each attribute again); a field
added to a record and forgotten in one of them was a silent bug. A :class:`Table` derives
all three from the record's attrs fields, in field order:

* :attr:`Table.columns` / :meth:`Table.select` -- the column list and ``SELECT`` head;
* :meth:`Table.from_row` -- a generated reader (straight-line code, as fast as the
  hand-written one) converting each column by the field's type: ``str``, ``int``,
  ``float``, ``bytes``, ``bool`` (stored ``0``/``1``), ``X | None`` of those, or a
  :class:`Column` given for the field;
* :meth:`Table.insert` -- ``INSERT`` statement and parameters (``generated`` columns such
  as an ``INTEGER PRIMARY KEY`` sequence are left to the database);
* :meth:`Table.update` -- an ``UPDATE`` of only the columns that differ between two
  versions of a row, keyed by :attr:`Table.key` (``None`` when nothing changed), and
  :meth:`Table.update_columns` for a fixed set of columns.

It holds no connection and runs no SQL: the statements it builds are plain SQL-92 with the
backend's parameter placeholder as a parameter (``"?"`` for SQLite/apsw, ``"%s"`` for
psycopg), so the SQLite stores and a PostgreSQL backend share one definition per record.

>>> @attrs.frozen(kw_only=True)
... class Row:
...     row_id: str
...     size: int
...     note: str | None = None
...     done: bool = False
>>> table = Table("demo", Row, key=("row_id",))
>>> table.columns
('row_id', 'size', 'note', 'done')
>>> table.select()
'SELECT row_id, size, note, done FROM demo'
>>> table.from_row(("r1", 3, None, 1))
Row(row_id='r1', size=3, note=None, done=True)
>>> table.insert(Row(row_id="r1", size=3))
('INSERT INTO demo (row_id, size, note, done) VALUES (?, ?, ?, ?)', ('r1', 3, None, 0))
>>> table.update(Row(row_id="r1", size=3), Row(row_id="r1", size=4, done=True))
('UPDATE demo SET size = ?, done = ? WHERE row_id = ?', (4, 1, 'r1'))
>>> table.update(Row(row_id="r1", size=3), Row(row_id="r1", size=3)) is None
True
>>> Table("demo", Row, key=("row_id",), placeholder="%s").insert(Row(row_id="r", size=1))[0]
'INSERT INTO demo (row_id, size, note, done) VALUES (%s, %s, %s, %s)'
"""

from __future__ import annotations

import enum
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import attrs

__all__ = ["Column", "Table"]

R = TypeVar("R")

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
_PLACEHOLDERS = frozenset({"?", "%s"})


@attrs.frozen
class Column:
    """How one field is stored when its type alone does not say: two plain functions.

    ``to_db`` turns the attribute into the column value, ``from_db`` the column value (never
    ``None`` -- a nullable field reads ``None`` as ``None`` before ``from_db`` is called)
    into the attribute.
    """

    to_db: Callable[[Any], Any]
    from_db: Callable[[Any], Any]


def _bool_to_db(value: Any) -> Any:
    return None if value is None else int(value)


def _identity(value: Any) -> Any:
    return value


def _enum_to_db(value: Any) -> Any:
    return None if value is None else value.value


_READERS: Mapping[Any, str] = {str: "str", int: "int", float: "float", bytes: "bytes", bool: "bool"}


def _split_optional(hint: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0], True
    return hint, False


class Table(Generic[R]):
    """The table ``name`` holding records of the attrs class ``record`` (see the module doc).

    ``key`` names the columns an update is keyed by; ``generated`` the columns the database
    fills on insert (left out of :meth:`insert`, still read by :meth:`from_row`);
    ``fixed`` fields that are not columns of this table, with the value a read gives them
    (a wire type's constant ``version``); ``renamed`` columns whose name differs from their
    field's (``{"commit": "commit_oid"}``; a ``generated`` field, never written, may read an
    expression such as ``length(envelope)``); ``columns`` a :class:`Column` for a field whose
    type is not one of the plain ones.
    A field of another type without a :class:`Column` is refused when the table is built.
    """

    def __init__(
        self,
        name: str,
        record: type[R],
        *,
        key: Sequence[str],
        generated: Sequence[str] = (),
        fixed: Mapping[str, Any] | None = None,
        renamed: Mapping[str, str] | None = None,
        columns: Mapping[str, Column] | None = None,
        placeholder: str = "?",
    ) -> None:
        if _IDENTIFIER.fullmatch(name) is None:
            raise ValueError(f"table name {name!r} is not a plain identifier")
        if placeholder not in _PLACEHOLDERS:
            raise ValueError(f"placeholder must be one of {sorted(_PLACEHOLDERS)}")
        self.name = name
        self.record = record
        self.placeholder = placeholder
        self._spec: dict[str, Any] = {
            "key": key,
            "generated": generated,
            "fixed": fixed,
            "renamed": renamed,
            "columns": columns,
        }
        hints = typing.get_type_hints(record)
        special = dict(columns or {})
        constants = dict(fixed or {})
        names = dict(renamed or {})
        fields = [f for f in attrs.fields(typing.cast(Any, record)) if f.name not in constants]
        self.fields: tuple[str, ...] = tuple(f.name for f in fields)
        """The record's fields stored in this table, in column order."""
        unknown = (set(key) | set(generated) | set(special) | set(names)) - set(self.fields)
        if unknown:
            raise ValueError(f"{record.__name__} has no stored field {sorted(unknown)}")
        for field_name, column in names.items():
            if _IDENTIFIER.fullmatch(column) is None and field_name not in generated:
                raise ValueError(f"column {column!r} of {field_name} is not a plain identifier")
        self.columns: tuple[str, ...] = tuple(names.get(f, f) for f in self.fields)
        self._column_of = dict(zip(self.fields, self.columns, strict=True))
        self.key: tuple[str, ...] = tuple(key)
        self.generated: tuple[str, ...] = tuple(generated)
        self._writers: dict[str, Callable[[Any], Any]] = {}
        namespace: dict[str, Any] = {"_R": record}
        args = []
        for index, (field_name, value) in enumerate(constants.items()):
            namespace[f"_c{index}"] = value
            args.append(f"{field_name}=_c{index}")
        for index, field in enumerate(fields):
            hint, optional = _split_optional(hints[field.name])
            if field.name in special:
                col = special[field.name]
                namespace[f"_r{index}"] = col.from_db
                reader = f"_r{index}"
                self._writers[field.name] = col.to_db
            elif isinstance(hint, type) and issubclass(hint, enum.Enum):
                namespace[f"_r{index}"] = hint
                reader = f"_r{index}"
                self._writers[field.name] = _enum_to_db
            elif hint in _READERS:
                reader = _READERS[hint]
                self._writers[field.name] = _bool_to_db if hint is bool else _identity
            else:
                raise ValueError(
                    f"{record.__name__}.{field.name} has type {hint!r}; give it a Column"
                )
            value = f"row[{index}]"
            expr = f"{reader}({value})"
            if optional:
                expr = f"None if {value} is None else {expr}"
            args.append(f"{field.name}={expr}")
        source = "def from_row(row):\n    return _R(" + ", ".join(args) + ")\n"
        exec(compile(source, f"<table {name}>", "exec"), namespace)  # noqa: S102 - built from field names
        self.from_row: Callable[[Sequence[Any]], R] = namespace["from_row"]
        """Build a record from a row whose columns are :attr:`columns`, in that order."""
        self._inserted = tuple(f for f in self.fields if f not in self.generated)
        inserted = [self._column_of[f] for f in self._inserted]
        self._insert_sql = (
            f"INSERT INTO {name} ({', '.join(inserted)}) "  # noqa: S608 - identifiers
            f"VALUES ({', '.join(placeholder for _ in inserted)})"
        )
        self._key_sql = " AND ".join(f"{self._column_of[f]} = {placeholder}" for f in self.key)

    def for_placeholder(self, placeholder: str) -> Table[R]:
        """The same table with another parameter style (``"%s"`` for psycopg).

        >>> import attrs
        >>> @attrs.frozen
        ... class T:
        ...     k: str
        >>> Table("t", T, key=("k",)).for_placeholder("%s").insert(T("x"))[0]
        'INSERT INTO t (k) VALUES (%s)'
        """
        return Table(self.name, self.record, placeholder=placeholder, **self._spec)

    @property
    def column_list(self) -> str:
        """The columns joined for a ``SELECT`` (``"a, b, c"``)."""
        return ", ".join(self.columns)

    def select(self, alias: str = "") -> str:
        """``SELECT <columns> FROM <table>`` (columns prefixed by ``alias.`` when given)."""
        if alias:
            if _IDENTIFIER.fullmatch(alias) is None:
                raise ValueError(f"alias {alias!r} is not a plain identifier")
            cols = ", ".join(f"{alias}.{c}" for c in self.columns)
            return f"SELECT {cols} FROM {self.name} {alias}"  # noqa: S608 - identifiers
        return f"SELECT {self.column_list} FROM {self.name}"  # noqa: S608 - identifiers

    def value(self, record: R, field: str) -> Any:
        """The stored value of one field of ``record``."""
        return self._writers[field](getattr(record, field))

    def insert(
        self, record: R, *, suffix: str = "", extra: Mapping[str, Any] | None = None
    ) -> tuple[str, tuple[Any, ...]]:
        """The ``INSERT`` statement and its values.

        ``suffix`` follows the statement (an ``ON CONFLICT`` clause); ``extra`` adds columns
        that are not fields of the record (the retained bytes beside their metadata, a
        sequence number the store assigns).
        """
        values = tuple(self._writers[c](getattr(record, c)) for c in self._inserted)
        if extra:
            for column in extra:
                if _IDENTIFIER.fullmatch(column) is None:
                    raise ValueError(f"column {column!r} is not a plain identifier")
            inserted = [self._column_of[f] for f in self._inserted] + list(extra)
            sql = (
                f"INSERT INTO {self.name} ({', '.join(inserted)}) "  # noqa: S608 - identifiers
                f"VALUES ({', '.join(self.placeholder for _ in inserted)})"
            )
            values += tuple(extra.values())
        else:
            sql = self._insert_sql
        return (f"{sql} {suffix}" if suffix else sql), values

    def changed(self, before: R, after: R) -> tuple[str, ...]:
        """The fields whose values differ between two versions of one row.

        A key field that differs is an error: an update never moves a row.
        """
        out = []
        for field in self.fields:
            if getattr(before, field) != getattr(after, field):
                if field in self.key:
                    raise ValueError(f"an update of {self.name} may not change key {field}")
                out.append(field)
        return tuple(out)

    def update_columns(
        self, record: R, columns: Sequence[str], *, where: str = "", params: Sequence[Any] = ()
    ) -> tuple[str, tuple[Any, ...]]:
        """``UPDATE`` of the fields ``columns`` to ``record``'s values, keyed by :attr:`key`.

        ``where`` adds a condition (with ``params`` for its placeholders), e.g. an
        optimistic ``version`` check.
        """
        if not columns:
            raise ValueError("an update needs at least one column")
        sets = ", ".join(f"{self._column_of[c]} = {self.placeholder}" for c in columns)
        sql = f"UPDATE {self.name} SET {sets} WHERE {self._key_sql}"  # noqa: S608 - identifiers
        if where:
            sql = f"{sql} AND {where}"
        values = tuple(self._writers[c](getattr(record, c)) for c in columns)
        keys = tuple(self._writers[c](getattr(record, c)) for c in self.key)
        return sql, values + keys + tuple(params)

    def update(self, before: R, after: R) -> tuple[str, tuple[Any, ...]] | None:
        """``UPDATE`` of only the columns that changed from ``before`` to ``after``, or ``None``."""
        columns = self.changed(before, after)
        if not columns:
            return None
        return self.update_columns(after, columns)
