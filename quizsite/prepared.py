"""The verdict path's SQL, built once: the one place where this project goes under the ORM.

Django compiles a queryset into SQL every time it runs it: ~0.35 ms of Python per query on a 2-core
machine, eight times what SQLite takes to answer an indexed lookup. A submission's path runs the same
few statements with new values each time:

- reads (the rate-limit window, the card's state, the open review, the drill's version): ``Prepared``
  compiles such a query once per database, with stand-in values it can find again among the statement's
  parameters, then binds each call's values there and returns what the queryset itself would (model
  instances, ``values_list`` tuples or flat values) through the same field converters. Only what is a
  parameter can change between calls: ints, strings, dates and datetimes. A value that changes the
  statement's shape (``None`` becomes ``IS NULL``, a list's length, a slice) belongs in the query's
  definition, not in its values;
- writes (a job's claim and finish, ``jobs.lifecycle``): ``update_where`` is
  ``filter(pk=..., **where).update(**values)`` without building a query, and ``update_returning`` the
  claim's conditional update that returns the row it claimed (one statement instead of an update and a
  read).

Why this exists, measured (bench/grading.py, the issue-13 command, four trees interleaved three times on
2026-11-28; docs/performance.md, "Under the ORM"): with ``Prepared`` replaced by the querysets, a
verdict's claimed-to-final time grew 0.6-0.7 ms and the web side's CPU 0.7-1.5 ms per verdict; with the
claim and finish through the ORM (an update and a get; ``QuerySet.update``), claimed-to-final grew
1.0-1.3 ms. Both are over the 0.2 ms per verdict below which a trick is not worth its reading.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections, router
from django.db.models import Model, QuerySet
from django.db.models.query import FlatValuesListIterable, ModelIterable, ValuesListIterable

T = TypeVar("T")
M = TypeVar("M", bound=Model)


def _stand_in(value: object, index: int, variant: int) -> object:
    """A value of ``value``'s type for the ``index``-th name, different in each ``variant``.

    Ints stay within every integer field's range (Django turns an out-of-range lookup into "no rows"
    before any SQL), so they are small; a query's own constant that happens to equal one is told apart
    by compiling twice (``_compile``).
    """
    if isinstance(value, bool) or value is None:
        raise TypeError(f"Prepared binds ints, strings, dates and datetimes, not {value!r}: put it in the query")
    if isinstance(value, int):
        return 20011 + 101 * index + 7 * variant
    if isinstance(value, str):
        return f"quizsite.prepared:{index}:{variant}"
    if isinstance(value, datetime.datetime):
        zone = datetime.UTC if value.tzinfo else None
        return datetime.datetime(1901, 2, 3, 4, 5, 6, 1000 * index + variant + 1, tzinfo=zone)
    if isinstance(value, datetime.date):
        return datetime.date(1901, 2, 3) + datetime.timedelta(days=10 * index + variant)
    raise TypeError(f"Prepared binds ints, strings, dates and datetimes, not {type(value).__name__}")


def _adapter(value: object, connection: Any) -> Callable[[Any], Any]:
    """How the backend passes a value of this type as a parameter (as a field's lookup would)."""
    if isinstance(value, datetime.datetime):
        return connection.ops.adapt_datetimefield_value
    if isinstance(value, datetime.date):
        return connection.ops.adapt_datefield_value
    return lambda v: v


@dataclass(frozen=True)
class _Statement:
    sql: str
    params: list[Any]  # the compiled parameters: constants of the query, stand-ins at the bound slots
    slots: dict[int, tuple[str, Callable[[Any], Any]]]  # position -> (the name bound there, its adapter)
    names: frozenset[str]
    converters: Converters
    shape: str  # "model", "tuple" or "flat"
    model: Any
    columns: list[str]  # the model's attnames, for "model"
    width: int  # the selected columns (a backend may append ordering ones)


class Prepared(Generic[T]):
    """``Prepared(lambda user_id: Model.objects.filter(user_id=user_id)[:1])``; ``.all(user_id=3)``.

    ``build`` returns the queryset for the given keyword values; it is called once per database (with
    stand-ins), never per query; each name keeps the type it had at that first call. Thread-safe:
    statements are immutable, each call uses its thread's connection.
    """

    def __init__(self, build: Callable[..., QuerySet[Any, T]]) -> None:
        self._build = build
        self._statements: dict[tuple[str, str], _Statement] = {}
        self._model: Any = None

    def all(self, **values: Any) -> list[T]:
        alias = router.db_for_read(self._model_for(values))
        connection = connections[alias]
        statement = self._statement(alias, connection.vendor, values)
        params = list(statement.params)
        for position, (name, adapt) in statement.slots.items():
            params[position] = adapt(values[name])
        with connection.cursor() as cursor:
            cursor.execute(statement.sql, params)
            rows = cursor.fetchall()
        return [_result(statement, alias, connection, row) for row in rows]

    def first(self, **values: Any) -> T | None:
        """The first row, or None (define the query's order and ``[:1]`` in ``build``)."""
        rows = self.all(**values)
        return rows[0] if rows else None

    def _model_for(self, values: dict[str, Any]) -> Any:
        if self._model is None:
            self._model = self._build(**_stand_ins(values)).model
        return self._model

    def _statement(self, alias: str, vendor: str, values: dict[str, Any]) -> _Statement:
        statement = self._statements.get((alias, vendor))
        if statement is None:
            statement = self._statements[(alias, vendor)] = _compile(self._build, alias, values)
        elif statement.names != set(values):
            raise TypeError(f"this query binds {sorted(statement.names)}, not {sorted(values)}")
        return statement


def _stand_ins(values: dict[str, Any], variant: int = 0) -> dict[str, Any]:
    return {name: _stand_in(value, i, variant) for i, (name, value) in enumerate(sorted(values.items()))}


def _compile(build: Callable[..., QuerySet[Any, Any]], alias: str, values: dict[str, Any]) -> _Statement:
    """Compile with two sets of stand-ins: the parameters that differ are the bound ones, and each
    says by its value which name it binds; the rest are the query's own constants."""
    connection = connections[alias]
    first, second = _stand_ins(values, 0), _stand_ins(values, 1)
    adapters = {name: _adapter(value, connection) for name, value in first.items()}
    queryset = build(**first)
    shape = _shape(queryset)
    compiler = queryset.query.get_compiler(using=alias)
    sql, compiled = compiler.as_sql()
    other_sql, other = build(**second).query.get_compiler(using=alias).as_sql()
    if other_sql != sql or len(other) != len(compiled):
        raise ValueError("the SQL changes with the values; put what changes it in the query")
    expected = [(name, adapters[name](first[name]), adapters[name](second[name])) for name in values]
    slots = {}
    for position, (one, two) in enumerate(zip(compiled, other, strict=True)):
        if one != two:
            found = [name for name, a, b in expected if one == a and two == b]
            if not found:
                raise ValueError(f"parameter {position} of the SQL is not one of the values as given")
            # psycopg's Int4 and the like tell PostgreSQL the column's type: keep the wrapper Django chose.
            wrapped = isinstance(one, int) and type(one) is not int
            slots[position] = (found[0], type(one) if wrapped else adapters[found[0]])
    missing = set(values) - {name for name, _ in slots.values()}
    if missing:
        raise ValueError(f"{sorted(missing)} did not become parameters of the SQL; put them in the query")
    columns: list[str] = []
    if shape == "model":
        info = compiler.klass_info
        if info.get("related_klass_infos"):
            raise TypeError("Prepared returns plain model rows: no select_related")
        start, end = info["select_fields"][0], info["select_fields"][-1] + 1
        columns = [column[0].target.attname for column in compiler.select[start:end]]
    expressions = [column[0] for column in compiler.select[: compiler.col_count]]
    return _Statement(
        sql=sql,
        params=list(compiled),
        slots=slots,
        names=frozenset(values),
        converters=compiler.get_converters(expressions),
        shape=shape,
        model=queryset.model,
        columns=columns,
        width=compiler.col_count,
    )


def _shape(queryset: QuerySet[Any, Any]) -> str:
    """What the rows become. Extra or annotated columns come before a model's own in the SELECT, so
    they are refused whatever the shape rather than handed to the wrong fields."""
    if queryset.query.extra_select or queryset.query.annotation_select:
        raise TypeError("Prepared returns the model's own fields only: no annotate() or extra()")
    if queryset._iterable_class is ModelIterable:  # noqa: SLF001 (how a queryset says what it yields)
        return "model"
    if queryset._iterable_class is FlatValuesListIterable:  # noqa: SLF001
        return "flat"
    if queryset._iterable_class is ValuesListIterable:  # noqa: SLF001
        return "tuple"
    raise TypeError("Prepared returns model instances or values_list() rows")


Converters = dict[int, tuple[list[Any], Any]]  # column -> (converters, expression): Django's get_converters()


def converted(row: tuple[Any, ...] | list[Any], converters: Converters, connection: Any) -> list[Any]:
    """A raw row's values as Python, through the converters Django's compiler would apply."""
    values = list(row)
    for index, (functions, expression) in converters.items():
        for convert in functions:
            values[index] = convert(values[index], expression, connection)
    return values


def _result(statement: _Statement, alias: str, connection: Any, row: tuple[Any, ...]) -> Any:
    values = converted(row[: statement.width], statement.converters, connection)
    if statement.shape == "model":
        return statement.model.from_db(alias, statement.columns, values)
    return values[0] if statement.shape == "flat" else tuple(values)


# ------------------------------------------------------------------------------------------------ writes


def update_where(model: type[Model], pk: Any, values: dict[str, Any], where: dict[str, Any]) -> int:
    """``UPDATE ... SET values WHERE pk AND where``: the rows changed (0 or 1).

    What ``Model.objects.filter(pk=pk, **where).update(**values)`` does, without building a query: the
    statement is built once per model, database and names, and each value goes through its field's own
    conversion (JSON, datetimes), as ``QuerySet.update`` would.
    """
    connection = connections[router.db_for_write(model)]
    statement = _update_statement(model, connection.alias, tuple(values), tuple(where), "", "", False)
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, statement.bind(values, pk, where, None, connection))
        return int(cursor.rowcount)


def update_returning(
    model: type[M], pk: Any, values: dict[str, Any], where: dict[str, Any], *, increment: str, below: tuple[str, int]
) -> M | None:
    """``UPDATE ... SET values, increment = increment + 1 WHERE pk AND where AND below[0] < below[1] RETURNING *``:
    the row as it is now, or None when no row matched or the database cannot return rows from an update
    (SQLite before 3.35: the caller takes the ORM's way, a conditional update and a read)."""
    connection = connections[router.db_for_write(model)]
    if not returns_from_update(connection.vendor):
        return None
    statement = _update_statement(model, connection.alias, tuple(values), tuple(where), increment, below[0], True)
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, statement.bind(values, pk, where, below[1], connection))
        row = cursor.fetchone()
    if row is None:
        return None
    return model.from_db(connection.alias, statement.columns, converted(row, statement.converters, connection))


def returns_from_update(vendor: str) -> bool:
    import sqlite3

    return vendor == "postgresql" or (vendor == "sqlite" and sqlite3.sqlite_version_info >= (3, 35))


@dataclass(frozen=True)
class _Update:
    sql: str
    assigned: list[tuple[str, Any]]  # (name as given, field) SET from values, in order
    matched: list[tuple[str, Any]]  # (name as given, field) of the WHERE after the primary key, in order
    columns: list[str]  # with RETURNING: every concrete field's attname, in the row's order
    converters: Converters

    def bind(
        self, values: dict[str, Any], pk: Any, where: dict[str, Any], limit: int | None, connection: Any
    ) -> list[Any]:
        params = [f.get_db_prep_save(values[name], connection) for name, f in self.assigned]
        params.append(pk)
        params += [f.get_db_prep_save(where[name], connection) for name, f in self.matched]
        return params if limit is None else [*params, limit]


@functools.cache
def _update_statement(
    model: type[Model],
    alias: str,
    assigned: tuple[str, ...],
    matched: tuple[str, ...],
    increment: str,
    below: str,
    returning: bool,
) -> _Update:
    connection = connections[alias]
    quote = connection.ops.quote_name
    meta = model._meta
    set_fields = [(name, meta.get_field(name)) for name in assigned]
    where_fields = [(name, meta.get_field(name)) for name in matched]
    assignments = [f"{quote(f.column)} = %s" for _, f in set_fields]
    if increment:
        column = quote(meta.get_field(increment).column)
        assignments.append(f"{column} = {column} + 1")
    conditions = [f"{quote(meta.pk.column)} = %s"] + [f"{quote(f.column)} = %s" for _, f in where_fields]
    if below:
        conditions.append(f"{quote(meta.get_field(below).column)} < %s")
    sql = f"UPDATE {quote(meta.db_table)} SET {', '.join(assignments)} WHERE {' AND '.join(conditions)}"
    columns: list[str] = []
    converters: Converters = {}
    if returning:
        fields = list(meta.concrete_fields)
        sql += f" RETURNING {', '.join(quote(f.column) for f in fields)}"
        columns = [f.attname for f in fields]
        for index, f in enumerate(fields):
            expression = f.get_col(meta.db_table)
            functions = connection.ops.get_db_converters(expression) + f.get_db_converters(connection)
            if functions:
                converters[index] = (functions, expression)
    return _Update(sql, set_fields, where_fields, columns, converters)
