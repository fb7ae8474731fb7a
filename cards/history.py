"""Review history import: a learner's past reviews, from the site's own review-log CSV, as their history.

Why: calibration and the FSRS fit learn from the review log, so a learner moving here (or back, or from
another quizsite) would otherwise start both from zero. The file is what the stats page's "Download my
review log" writes (``cards.revlog``'s columns); ``card_id``, ``day`` and ``rating`` are required, the
other columns are used when present.

The rows become ``ReviewLog`` entries with ``source="import"``: the scoring, the fit, a scheduler switch
and the stats read them; XP, team boards and streaks do not (the reviews happened elsewhere or earlier;
``teams.xp.OWN_SOURCES``, ``teams.activity``). No card's schedule changes.

1. bounded: the upload's bytes (``ANKI_IMPORT_MAX_BYTES``, as the Anki import) and ``MAX_ROWS`` rows;
2. every row is parsed and checked before the first write; one bad row refuses the file, naming its line;
3. rows match the learner's visible cards by uuid (a team export's ``learner/uuid`` too, if the file holds
   one learner); unknown cards are skipped and counted;
4. only days before the learner's today: today's queue, limits and counts stay the site's own;
5. idempotent: a review already in the log (same card, same instant, any source) is not imported again;
6. written in one transaction, under a lock on the learner so two imports at once cannot both insert.
"""

from __future__ import annotations

import csv
import io
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext as _

from cards.models import Card, ReviewLog, Scheduler
from cards.review import get_profile, learner_today
from cards.scheduling.fsrs6 import EPOCH, noon_utc

MAX_ROWS = 200_000
REQUIRED = ("card_id", "day", "rating")
# The review buttons' qualities for FSRS's ratings (cards.scheduling.fsrs6.rating_for_quality maps them back).
QUALITY_FOR_RATING = {1: 1, 2: 3, 3: 4, 4: 5}
MAX_DURATION_MS = 24 * 3600 * 1000


class HistoryImportError(Exception):
    """A file that cannot be imported; the message says why, in words a learner can act on."""


@dataclass(frozen=True)
class Row:
    card: uuid.UUID
    reviewed_at: datetime
    day: date
    quality: int
    duration_ms: int
    elapsed_days: int | None
    scheduled_days: int | None
    scheduler: str


@dataclass(frozen=True)
class Summary:
    imported: int
    duplicates: int
    unknown_cards: int
    not_before_today: int


def read_csv(data: bytes) -> list[Row]:
    """Steps 1-2: every row parsed and checked; raises ``HistoryImportError`` naming the first bad line."""
    if len(data) > settings.ANKI_IMPORT_MAX_BYTES:
        raise HistoryImportError(
            _("The file is %(size)d bytes, over the %(limit)d byte limit.")
            % {"size": len(data), "limit": settings.ANKI_IMPORT_MAX_BYTES}
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise HistoryImportError(_("The file is not UTF-8 text: export the review log as CSV.")) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        missing = [name for name in REQUIRED if name not in (reader.fieldnames or [])]
        if missing:
            raise HistoryImportError(
                _("The first line must name the columns card_id, day and rating (missing: %(missing)s).")
                % {"missing": ", ".join(missing)}
            )
        rows, learners = [], set()
        for row in reader:
            if len(rows) >= MAX_ROWS:
                raise HistoryImportError(_("The file holds more than %(n)d reviews.") % {"n": MAX_ROWS})
            try:
                rows.append(_row(row))
            except (ValueError, TypeError, OverflowError) as exc:
                raise HistoryImportError(
                    _("Line %(line)d is not a review: %(error)s") % {"line": reader.line_num, "error": exc}
                ) from None
            learners.add(row.get("learner") or "")
    except csv.Error as exc:
        raise HistoryImportError(_("The file is not valid CSV: %(error)s") % {"error": exc}) from None
    if len(learners) > 1:
        raise HistoryImportError(_("The file holds several learners' reviews: import your own review log."))
    return rows


def _optional_int(value: str | None, low: int, high: int, name: str) -> int | None:
    if value is None or value.strip() == "":
        return None
    number = int(value)
    if not low <= number <= high:
        raise ValueError(f"{name} {number} is outside {low}..{high}")
    return number


def _row(row: dict[str, Any]) -> Row:
    if None in row:
        raise ValueError("more fields than columns")
    card = uuid.UUID(str(row["card_id"]).rsplit("/", 1)[-1])
    day = EPOCH + timedelta(days=int(row["day"]))
    quality = _optional_int(row.get("quality"), 0, 5, "quality")
    if quality is None:
        rating = int(row["rating"])
        if rating not in QUALITY_FOR_RATING:
            raise ValueError(f"rating {rating} is not 1 to 4")
        quality = QUALITY_FOR_RATING[rating]
    at = (row.get("reviewed_at") or "").strip()
    reviewed_at = datetime.fromisoformat(at) if at else noon_utc(day)
    if reviewed_at.tzinfo is None:
        raise ValueError(f"reviewed_at {at} has no time zone")
    scheduler = row.get("scheduler") or Scheduler.SM2
    return Row(
        card=card,
        reviewed_at=reviewed_at,
        day=day,
        quality=quality,
        duration_ms=_optional_int(row.get("duration_ms"), 0, MAX_DURATION_MS, "duration_ms") or 0,
        elapsed_days=_optional_int(row.get("elapsed_days"), 0, 100_000, "elapsed_days"),
        scheduled_days=_optional_int(row.get("scheduled_days"), 0, 100_000, "scheduled_days"),
        scheduler=scheduler if scheduler in Scheduler.values else Scheduler.SM2,
    )


def save(user: AbstractBaseUser, rows: list[Row], now: datetime) -> Summary:
    """Steps 3-6."""
    today = learner_today(get_profile(user), now)
    cards = dict(Card.objects.visible_to(user).filter(uuid__in={row.card for row in rows}).values_list("uuid", "pk"))
    known = [row for row in rows if row.card in cards]
    past = [row for row in known if row.day < today]
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        existing = ReviewLog.ledger.filter(user=user, card_id__in=set(cards.values()))
        seen = set(existing.values_list("card_id", "reviewed_at"))
        first_seen: dict[int, datetime] = {}
        for card_id, at in seen:
            first_seen[card_id] = min(at, first_seen.get(card_id, at))
        new_rows: list[ReviewLog] = []
        for row in sorted(past, key=lambda r: r.reviewed_at):
            card_id = cards[row.card]
            if (card_id, row.reviewed_at) in seen:
                continue
            seen.add((card_id, row.reviewed_at))
            was_new = card_id not in first_seen or row.reviewed_at < first_seen[card_id]
            first_seen[card_id] = min(row.reviewed_at, first_seen.get(card_id, row.reviewed_at))
            new_rows.append(_entry(user, card_id, row, was_new))
        ReviewLog.ledger.bulk_create(new_rows, batch_size=2000)
    return Summary(
        imported=len(new_rows),
        duplicates=len(past) - len(new_rows),
        unknown_cards=len(rows) - len(known),
        not_before_today=len(known) - len(past),
    )


def _entry(user: AbstractBaseUser, card_id: int, row: Row, was_new: bool) -> ReviewLog:
    ease = Decimal("2.50")
    return ReviewLog(
        user=user, card_id=card_id, quality=row.quality, duration_ms=row.duration_ms, reviewed_at=row.reviewed_at,
        review_day=row.day, source=ReviewLog.Source.IMPORT, was_new=was_new, easiness_before=ease,
        interval_before=row.scheduled_days or 0, repetitions_before=0, easiness_after=ease, interval_after=0,
        repetitions_after=0, due_after=row.day, elapsed_days=row.elapsed_days, scheduled_days=row.scheduled_days,
        scheduler=row.scheduler,
    )  # fmt: skip


def import_csv(user: AbstractBaseUser, data: bytes, now: datetime) -> Summary:
    return save(user, read_csv(data), now)
