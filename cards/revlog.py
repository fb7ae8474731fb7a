"""A learner's or a team's review log as CSV, in the format ``python -m cards.scheduling.evaluate`` reads.

Runs in the web process (the export links on the stats pages). Columns: ``card_id,day,rating`` first
(day: days since 1970-01-01 of the learner's day; rating 1-4 from the stored SM-2 quality, as
``cards.scheduling.fsrs6.rating_for_quality`` maps it), then what research also needs. Rows stream
in (learner, card, time) order, so a large log never sits in memory.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from django.db.models import QuerySet

from cards.models import ReviewLog
from cards.scheduling.fsrs6 import EPOCH, rating_for_quality

COLUMNS = (
    "card_id", "day", "rating", "learner", "reviewed_at", "quality", "elapsed_days", "scheduled_days",
    "duration_ms", "source", "scheduler", "parameters_version",
)  # fmt: skip


class _Echo:
    """A file-like object whose write returns the line, for a streaming response."""

    def write(self, value: str) -> str:
        return value


def revlog_rows(logs: QuerySet[ReviewLog], learners: dict[int, str] | None = None) -> Iterator[list[object]]:
    """One row per review. A team's export names each learner by ``learners`` (a pseudonym), and
    card ids carry it, so two learners' copies of a card stay two cards to the scoring."""
    fields = (
        "user_id", "card__uuid", "review_day", "quality", "reviewed_at", "elapsed_days", "scheduled_days",
        "duration_ms", "source", "scheduler", "parameters_version",
    )  # fmt: skip
    rows = logs.order_by("user_id", "card_id", "reviewed_at", "pk").values_list(*fields)
    for user_id, card, day, quality, at, elapsed, scheduled, duration, source, scheduler, version in rows.iterator(
        chunk_size=5000
    ):
        learner = learners[user_id] if learners else ""
        card_id = f"{learner}/{card}" if learner else str(card)
        yield [
            card_id, (day - EPOCH).days, rating_for_quality(quality), learner, at.isoformat(), quality,
            "" if elapsed is None else elapsed, "" if scheduled is None else scheduled, duration, source,
            scheduler, version,
        ]  # fmt: skip


def csv_lines(rows: Iterable[list[object]]) -> Iterator[str]:
    writer = csv.writer(_Echo(), lineterminator="\n")
    yield writer.writerow(COLUMNS)
    for row in rows:
        yield writer.writerow(row)
