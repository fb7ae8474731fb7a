"""A learner's day, read in one statement: what the review queue needs that changes with every rating.

Four parts told apart by the first column:

0. one row: the deck stamp (``deck.stamp_columns``), the learner's stage order (``Profile.learning_order``;
   no profile yet: NULL, the default) and today's review counts (all, new first answers, review first
   answers);
1. a row per review today: the card (what buries its siblings);
2. a row per state in today's due queue or repeat queue (seen and available: due / rated below Good
   today), with which and its rank in each order;
3. one row: every card a state blocks from the new queue (seen, suspended or buried), as one
   comma-separated text. A learner's seen cards are most of their states and the new queue only asks
   whether a card is among them: one text per request instead of a typed row per state keeps the cost of
   a learner with thousands of cards near that of a beginner.

Dates are compared in SQL, so each backend's own date storage never reaches Python. Nothing here is kept
between requests but the statement's text, so no rating, undo, suspension or settings change can leave a
stale queue behind.

The A/B that keeps it: docs/performance.md, "Review queue: CPU per rating" (the queue as correlated ORM
subqueries against this statement and a walk in Python).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db import connections

from cards.models import CardState, Profile, ReviewLog
from fastpath.deck import stamp_columns


@dataclass(frozen=True)
class DayRows:
    """The statement's rows, by part."""

    stamp: tuple[Any, ...]  # the deck stamp
    learning_order: str | None  # the stored stage order as JSON text, None without a profile
    reviewed_today: int
    new_done: int  # today's first answers of new cards
    reviews_done: int  # today's first answers of review cards
    answered: set[int]  # card pks answered today
    # (state pk, card pk, due today?, repeat today?, rank in the due order, rank in the repeat order)
    queued: list[tuple[int, int, int, int, int, int]]
    blocked: set[int]  # card pks that are not new


def _day_sql(vendor: str) -> str:
    log, state, profile = ReviewLog._meta.db_table, CardState._meta.db_table, Profile._meta.db_table
    # The live entries only, as ``ReviewLog.objects`` reads them: an undone entry and its reversal count as nothing.
    live = f"{log}.reverses_id IS NULL AND NOT EXISTS (SELECT 1 FROM {log} r WHERE r.reverses_id = {log}.id)"
    logs = f"FROM {log} WHERE {log}.user_id = %(user)s AND {log}.review_day = %(today)s AND {live}"
    available = "NOT s.suspended AND (s.buried_until IS NULL OR s.buried_until <= %(today)s)"
    due = f"s.last_reviewed_at IS NOT NULL AND s.due <= %(today)s AND {available}"
    repeat = f"s.needs_repeat AND s.last_review_day = %(today)s AND {available}"
    blocking = "(s.last_reviewed_at IS NOT NULL OR s.suspended OR s.buried_until > %(today)s)"
    ids = "string_agg(CAST(s.card_id AS TEXT), ',')" if vendor == "postgresql" else "group_concat(s.card_id, ',')"
    return (  # noqa: S608 (the table names are the models' own)
        f"SELECT 0, {stamp_columns()}, "
        f"CAST((SELECT learning_order FROM {profile} WHERE user_id = %(user)s) AS TEXT), "
        f"(SELECT COUNT(*) {logs}), "
        f"(SELECT COUNT(*) {logs} AND was_new AND NOT is_same_day_repeat), "
        f"(SELECT COUNT(*) {logs} AND NOT was_new AND NOT is_same_day_repeat), "
        f"{', '.join(['CAST(NULL AS BIGINT)'] * 7)} "  # typed: PostgreSQL types a union by its first part
        f"UNION ALL SELECT 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, card_id, "
        f"NULL, NULL, NULL, NULL, NULL, NULL {logs} "
        "UNION ALL SELECT 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, s.id, s.card_id, "
        f"CASE WHEN {due} THEN 1 ELSE 0 END, CASE WHEN {repeat} THEN 1 ELSE 0 END, "
        "ROW_NUMBER() OVER (ORDER BY s.due, s.last_reviewed_at, s.id), "
        "ROW_NUMBER() OVER (ORDER BY s.last_reviewed_at, s.id) "
        f"FROM {state} s WHERE s.user_id = %(user)s AND (({due}) OR ({repeat})) "
        f"UNION ALL SELECT 3, NULL, NULL, NULL, NULL, {ids}, NULL, NULL, NULL, NULL, "
        f"NULL, NULL, NULL, NULL, NULL, NULL FROM {state} s WHERE s.user_id = %(user)s AND {blocking}"
    )


_statements: dict[str, tuple[str, list[str]]] = {}  # alias -> (SQL with %s, the name bound at each %s)


def _positional(sql: str) -> tuple[str, list[str]]:
    """Named placeholders to %s (both backends take %s; SQLite's wrapper has no named style)."""
    names = re.findall(r"%\((\w+)\)s", sql)
    return re.sub(r"%\((\w+)\)s", "%s", sql), names


def read(alias: str, user_id: int, today: date) -> DayRows:
    """The learner's day on ``alias``."""
    connection = connections[alias]
    if alias not in _statements:
        _statements[alias] = _positional(_day_sql(connection.vendor))
    sql, names = _statements[alias]
    values = {"user": user_id, "today": connection.ops.adapt_datefield_value(today)}
    with connection.cursor() as cursor:
        cursor.execute(sql, [values[name] for name in names])
        rows = cursor.fetchall()
    header = next(row for row in rows if row[0] == 0)
    blocked = next((row[5] for row in rows if row[0] == 3), None)
    return DayRows(
        stamp=tuple(header[1:5]),
        learning_order=header[5],
        reviewed_today=header[6] or 0,
        new_done=header[7] or 0,
        reviews_done=header[8] or 0,
        answered={row[9] for row in rows if row[0] == 1},
        queued=[row[10:16] for row in rows if row[0] == 2],
        blocked=set(map(int, blocked.split(","))) if blocked else set(),
    )
