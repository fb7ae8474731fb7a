"""The daily review: the learner's day, the queues, rating, undo, suspend and bury.

Plain functions that views (and the grader, with ``source=GRADER``) call. All scheduling
arithmetic is delegated to the learner's scheduler (``cards.scheduling.schedulers``: SM-2 by
default, FSRS-6 by choice); this module only decides *which* card comes next and stores what the
scheduler returned. Every write is conditional on the state's
``version`` so that a double-submitted rating, or a rating from a stale tab, is recorded once.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal, TypedDict

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from cards import queueing
from cards.models import Card, CardState, Credit, Profile, ReviewLog
from cards.queueing import QueueSnapshot
from cards.scheduling import fire, fsrs6, fuzz, schedulers
from cards.scheduling.schedulers import CardMemory, Scheduler
from cards.scheduling.sm2 import Rating, SM2State
from cards.touched import touch

QueueName = Literal["due", "new", "repeat"]
MAX_DURATION_MS = 10 * 60 * 1000  # A card left open over lunch is not a ten-minute answer.
STREAK_LOOKBACK_DAYS = 3660
LEECH_LAPSES = 4  # lapses that make a question or mapping card a leech (see bring_drill_for_leech)
# Card fields the review page never shows: the markdown sources and the whole note's text.
NOT_SHOWN = ("front", "back", "note__content")


def learner_today(profile: Profile, now: datetime) -> date:
    """The learner's calendar day: local date in their zone, with the day starting at ``day_start_hour``.

    A review at 02:00 in Shanghai with the default 04:00 start still belongs to yesterday,
    exactly like Anki's "next day starts at".
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("learner_today needs an aware datetime")
    return profile.day_at(now)


def get_profile(user: AbstractBaseUser) -> Profile:
    """The user's profile, created on first use. Free when the auth backend already joined it."""
    try:
        return user.profile
    except Profile.DoesNotExist:
        profile, _created = Profile.objects.get_or_create(user=user)
        user.profile = profile
        return profile


def queue_snapshot(user: AbstractBaseUser, profile: Profile, today: date) -> QueueSnapshot:
    """Today's counts and queue heads (``cards.queueing``: the deck kept in memory, the learner read fresh)."""
    return queueing.snapshot(user.pk, profile, today)


class RatingButton(TypedDict):
    rating: int
    name: str  # "again" ... "easy": the button's class, whatever the interface language
    label: str
    key: int
    hint: str


@dataclass(frozen=True)
class ReviewItem:
    """The card to show and what its rating form must carry."""

    card: Card
    queue: QueueName
    version: int
    sm2: SM2State
    due: date | None
    user_note: str
    today: date
    scheduler: Scheduler = schedulers.SM2Scheduler()
    fsrs: fsrs6.Memory | None = None

    def buttons(self) -> list[RatingButton]:
        """Again / Hard / Good / Easy, each labelled with what it will really do.

        A rating that brings the card back today (below Good under SM-2, its same-day repeat; Again
        under FSRS) says "today" first: "today · 1d", not a bare "1d" that hides the repeat. Under
        FSRS every button shows FSRS's interval, a same-day repeat's included (FSRS reschedules it).
        """
        labels = {
            Rating.AGAIN: pgettext("rating", "Again"),
            Rating.HARD: pgettext("rating", "Hard"),
            Rating.GOOD: pgettext("rating", "Good"),
            Rating.EASY: pgettext("rating", "Easy"),
        }
        today = pgettext("interval", "today")
        again = {r: _again_today(self.scheduler, r) for r in Rating}
        if self.queue == "repeat" and self.scheduler.name == "sm2":
            # An SM-2 same-day repeat never changes the schedule: below 4 it comes back today, else it is done.
            days = max(0, (self.due - self.today).days) if self.due else 0
            hints = {r: (today if again[r] else _days(days)) for r in Rating}
        else:
            memory = CardMemory(sm2=self.sm2, fsrs=self.fsrs)
            hints = {
                r: f"{today} · {_days(n)}" if again[r] else _days(n)
                for r, n in self.scheduler.preview(memory, self.today).items()
            }
        return [
            RatingButton(rating=int(r), name=r.name.lower(), label=labels[r], key=i, hint=hints[r])
            for i, r in enumerate(Rating, start=1)
        ]


def _again_today(scheduler: Scheduler, rating: Rating) -> bool:
    if scheduler.name == "fsrs":
        return rating == Rating.AGAIN
    return rating < Rating.GOOD


def scheduler_for(profile: Profile) -> Scheduler:
    """The scheduler the learner chose, with their FSRS parameters and desired retention."""
    return schedulers.for_learner(profile.scheduler, profile.fsrs_parameters, float(profile.desired_retention))


def stored_memory(state: CardState) -> fsrs6.Memory | None:
    if state.stability is not None and state.difficulty is not None and state.last_review_day is not None:
        return fsrs6.Memory(state.stability, state.difficulty, state.last_review_day)
    return None


def fsrs_memory(state: CardState, scheduler: Scheduler) -> fsrs6.Memory | None:
    """The card's FSRS state: stored, else computed from its full history (a query: only for a card
    not reviewed since the learner switched), else from its SM-2 ease and interval; None while new."""
    stored = stored_memory(state)
    if stored is not None:
        return stored
    if state.last_reviewed_at is None or not isinstance(scheduler, schedulers.FSRSScheduler):
        return None
    history = list(
        ReviewLog.objects.filter(user_id=state.user_id, card_id=state.card_id)
        .order_by("reviewed_at", "pk")
        .values_list("review_day", "quality", "was_new")
    )
    return memory_from(scheduler, state, history)


def memory_from(
    scheduler: schedulers.FSRSScheduler, state: CardState, history: list[tuple[date, int, bool]]
) -> fsrs6.Memory | None:
    """A card's FSRS state from its logs ``(day, quality, was_new)``, when they start at its first review
    (the way Anki switches); else from SM-2's ease and interval (Anki's fallback); None when neither exists."""
    if history and history[0][2]:
        return fsrs6.from_history(scheduler.fsrs, [(day, quality) for day, quality, _ in history])
    if state.repetitions == 0 or state.last_review_day is None:
        return None
    return fsrs6.from_sm2(scheduler.fsrs, float(state.easiness), state.interval, state.last_review_day)


def _days(n: int) -> str:
    """An interval as a button hint: "today", "3d", "1.5mo", "2.1y" (in the learner's language)."""
    if n == 0:
        return pgettext("interval", "today")
    if n < 31:
        return _("%(n)dd") % {"n": n}
    if n < 365:
        return _("%(n).1fmo") % {"n": n / 30}
    return _("%(n).1fy") % {"n": n / 365}


def _sm2_of(state: CardState) -> SM2State:
    return SM2State(easiness=float(state.easiness), interval=state.interval, repetitions=state.repetitions)


def next_card(user: AbstractBaseUser, profile: Profile, now: datetime) -> tuple[ReviewItem | None, QueueSnapshot]:
    """Due cards first (most overdue first), then new cards in the learning order, then today's repeats."""
    today = learner_today(profile, now)
    snap = queue_snapshot(user, profile, today)
    state_pk, queue = (snap.next_due, "due") if snap.next_due else (snap.next_repeat, "repeat")
    if snap.next_due is None and snap.next_new is not None:
        state_version = CardState.objects.filter(user=user, card=OuterRef("pk"))
        card = (
            Card.objects.select_related("note")
            .defer(*NOT_SHOWN)
            .annotate(
                state_version=Subquery(state_version.values("version")[:1]),
                state_note=Subquery(state_version.values("user_note")[:1]),
            )
            .get(pk=snap.next_new)
        )
        item = ReviewItem(
            card=card,
            queue="new",
            version=card.state_version or 0,
            sm2=SM2State(),
            due=None,
            user_note=card.state_note or "",
            today=today,
            scheduler=scheduler_for(profile),
        )
        return item, snap
    if state_pk is None:
        return None, snap
    state = CardState.objects.select_related("card__note").defer(*(f"card__{f}" for f in NOT_SHOWN)).get(pk=state_pk)
    scheduler = scheduler_for(profile)
    item = ReviewItem(
        card=state.card,
        queue=queue,
        version=state.version,
        sm2=_sm2_of(state),
        due=state.due,
        user_note=state.user_note,
        today=today,
        scheduler=scheduler,
        fsrs=fsrs_memory(state, scheduler),
    )
    return item, snap


class Outcome(enum.Enum):
    RECORDED = "recorded"
    DUPLICATE = "duplicate"  # the form's version is stale: already rated (double submit, other tab)
    NOT_IN_QUEUE = "not_in_queue"  # not due, suspended, buried, inactive or not the user's
    NOT_FOUND = "not_found"
    NEW_LIMIT = "new_limit"  # a new card past today's new-card limit (Profile.new_cards_per_day)

    @property
    def message(self) -> str:
        """Why a rating was refused, in words for the learner ("" when it was not)."""
        return {
            Outcome.NOT_FOUND: _("No such card in your reviews."),
            Outcome.NOT_IN_QUEUE: _("This card is not due for review now."),
            Outcome.NEW_LIMIT: _(
                "You have reached today's limit of new cards; this one waits for another day "
                "(the limit is in your settings)."
            ),
        }.get(self, "")


@dataclass(frozen=True)
class RatingRequest:
    card_uuid: Any
    quality: int
    version: int
    duration_ms: int = 0
    source: str = ReviewLog.Source.SELF


def _prior(state: CardState) -> dict[str, Any]:
    """The fields a rating changes, as JSON, so undo can put them back exactly."""
    return {
        "easiness": str(state.easiness),
        "interval": state.interval,
        "repetitions": state.repetitions,
        "due": state.due.isoformat(),
        "lapses": state.lapses,
        "stability": state.stability,
        "difficulty": state.difficulty,
        "last_reviewed_at": state.last_reviewed_at.isoformat() if state.last_reviewed_at else None,
        "last_review_day": state.last_review_day.isoformat() if state.last_review_day else None,
        "needs_repeat": state.needs_repeat,
        "version": state.version,
    }


def _in_queue(state: CardState, today: date) -> bool:
    if not state.card.active or state.suspended or (state.buried_until and state.buried_until > today):
        return False
    if state.last_reviewed_at is None or state.due <= today:
        return True
    return state.needs_repeat and state.last_review_day == today


def _rateable_by(kind: str, source: str) -> bool:
    """A drill card is rated by the grader's verdict only: a self-rating for it is refused."""
    return kind != Card.Kind.DRILL or source == ReviewLog.Source.GRADER


def _changes(
    state: CardState, quality: int, now: datetime, today: date, scheduler: Scheduler
) -> tuple[dict[str, Any], bool]:
    """The new field values after this rating, and whether it was a same-day repeat (SM-2 step 7).

    Under SM-2 the FSRS state is cleared (it would go stale; a switch recomputes it from the
    history); under FSRS the SM-2 state still moves as SM-2 would, so switching back keeps it.
    """
    repeat = state.needs_repeat and state.last_review_day == today and state.last_reviewed_at is not None
    memory = CardMemory(sm2=_sm2_of(state), fsrs=fsrs_memory(state, scheduler))
    step = scheduler.review(memory, quality, today, repeat)
    changes: dict[str, Any] = {"last_reviewed_at": now, "last_review_day": today, "needs_repeat": step.again_today}
    after_fsrs = step.memory.fsrs if scheduler.name == "fsrs" else None
    changes.update(stability=after_fsrs and after_fsrs.stability, difficulty=after_fsrs and after_fsrs.difficulty)
    if step.interval is not None:
        changes["due"] = today + timedelta(days=step.interval)
    if repeat:
        return changes, True
    after = step.memory.sm2
    lapse = quality < 3 and state.repetitions > 0
    changes.update(
        easiness=Decimal(after.easiness_hundredths) / 100,
        interval=after.interval,
        repetitions=after.repetitions,
        lapses=state.lapses + int(lapse),
    )
    return changes, False


def rate(user: AbstractBaseUser, profile: Profile, request: RatingRequest, now: datetime) -> Outcome:
    """Record one rating: CardState and ReviewLog change together or not at all, and at most once per version.

    1. version 0 means the form showed a card with no state row: insert it; the (user, card)
       unique constraint turns a second insert into a duplicate.
    2. Otherwise the row is updated only where its version still equals the form's, so of two
       concurrent submits exactly one changes a row and writes a log.
    """
    if request.source == ReviewLog.Source.SELF:
        Rating(request.quality)  # raises ValueError for 0, 2 or anything not on a button
    elif isinstance(request.quality, bool) or request.quality not in range(6):
        raise ValueError(f"SM-2 quality must be an int from 0 to 5, not {request.quality!r}")
    today = learner_today(profile, now)
    duration = max(0, min(int(request.duration_ms), MAX_DURATION_MS))
    if request.version == 0:
        return _rate_new(user, profile, request, now, today, duration)
    # Only a card the learner may see: a uuid of another learner's private deck, or of a course the learner
    # cannot (or no longer) read, is no card of theirs, whichever path the rating comes by.
    visible = Card.objects.visible_to(user)
    state = (
        CardState.objects.select_related("card")
        .filter(user=user, card__uuid=request.card_uuid, card__in=visible)
        .first()
    )
    if state is None:
        return Outcome.NOT_FOUND
    if state.version != request.version:
        return Outcome.DUPLICATE
    if not _in_queue(state, today) or not _rateable_by(state.card.kind, request.source):
        return Outcome.NOT_IN_QUEUE
    before = _sm2_of(state)
    scheduler = scheduler_for(profile)
    changes, repeat = _changes(state, request.quality, now, today, scheduler)
    if profile.fuzz and "due" in changes:
        changes["due"] = balanced_due(user, state.card, changes["due"], today)
    with transaction.atomic():
        updated = CardState.objects.filter(pk=state.pk, version=state.version).update(
            **changes, version=F("version") + 1
        )
        if updated != 1:
            return Outcome.DUPLICATE
        ReviewLog.objects.create(
            **_log_fields(user, state.card_id, request, now, today, duration),
            **_research_fields(state, today, scheduler, profile),
            was_new=state.last_reviewed_at is None,
            is_same_day_repeat=repeat,
            easiness_before=state.easiness,
            interval_before=before.interval,
            repetitions_before=before.repetitions,
            due_before=None if state.last_reviewed_at is None else state.due,
            easiness_after=changes.get("easiness", state.easiness),
            interval_after=changes.get("interval", state.interval),
            repetitions_after=changes.get("repetitions", state.repetitions),
            due_after=changes.get("due", state.due),
            prior_state=_prior(state),
        )
        touch(user.pk, today)
        if changes.get("lapses", state.lapses) > state.lapses >= LEECH_LAPSES - 1:
            bring_drill_for_leech(user, state.card, now, today)
    return Outcome.RECORDED


def leech_drill(card: Card) -> Card | None:
    """The drill on the same note section as ``card``: same anchor, else a heading on its path, else same note."""
    segments = {part.strip() for part in card.heading_path.split("/") if part.strip()}

    def closeness(drill: Card) -> tuple[int, int]:
        if card.anchor and drill.anchor == card.anchor:
            return 0, drill.position
        if drill.heading_path and (drill.heading_path in segments or card.heading_path.startswith(drill.heading_path)):
            return 1, drill.position
        return 2, drill.position

    drills = Card.objects.active().filter(kind=Card.Kind.DRILL, note_id=card.note_id).only("anchor", "heading_path")
    return min(drills, key=closeness, default=None)


def bring_drill_for_leech(user: AbstractBaseUser, card: Card, now: datetime, today: date) -> Card | None:
    """A question or mapping card that lapsed ``LEECH_LAPSES`` times (and on every lapse after) is a leech:
    the drill on its note section joins today's due queue, so the learner practises the idea by writing it.

    Only this rare path costs queries. A drill the learner never saw gets a state that is due today
    and counts as seen (``last_reviewed_at`` set, no ReviewLog), so it skips the new-card queue; a
    suspended drill stays suspended. Undoing the lapse leaves the drill where it is.
    """
    if card.kind not in (Card.Kind.QA, Card.Kind.MAPPING):
        return None
    drill = leech_drill(card)
    if drill is None:
        return None
    state = CardState.objects.filter(user=user, card=drill).first()
    if state is None:
        CardState.objects.create(user=user, card=drill, due=today, last_reviewed_at=now, version=1)
    else:
        CardState.objects.filter(pk=state.pk).update(
            due=min(state.due, today),
            last_reviewed_at=state.last_reviewed_at or now,
            version=F("version") + 1,
        )
    return drill


def record_graded(user: AbstractBaseUser, card: Card, quality: int, now: datetime) -> Outcome:
    """The grader's entry point: a drill verdict, already mapped to an SM-2 quality 0..5, as a review.

    Like a learner's rating it only counts when the card is in the learner's queue today
    (new, due, or a same-day repeat); otherwise it returns NOT_IN_QUEUE and nothing is written.
    A pass's credit to the cards it builds on is written in the same transaction: the rating and its
    credit commit together or not at all, and the day's recompute (``touch``) sees both.
    """
    profile = get_profile(user)
    version = CardState.objects.filter(user=user, card=card).values_list("version", flat=True).first() or 0
    request = RatingRequest(card.uuid, quality, version, source=ReviewLog.Source.GRADER)
    with transaction.atomic():
        outcome = rate(user, profile, request, now)
        if outcome == Outcome.RECORDED and quality >= Rating.GOOD:
            credit_prerequisites(user, profile, card, now)
    return outcome


def credit_prerequisites(user: AbstractBaseUser, profile: Profile, card: Card, now: datetime) -> int:
    """A drill passed (Good or Easy): FIRe-style implicit credit (``cards.scheduling.fire``, docs/scheduling.md)
    to the cards that teach the concepts it needs (``cards.ingest.concepts.ConceptMap.builds_on``), under FSRS
    only (SM-2 stays exact): of those the learner has reviewed before today, the ``fire.CARDS`` due soonest
    each get ``fire.WEIGHT`` of a Good review, which only ever moves their due day later.

    No review is logged (a credit is no answer), but the credit is part of the drill's rating: each credited
    state's version moves (a stale tab, an API client or a cache keyed on versions sees the change), and a
    ``Credit`` row beside the drill's ``ReviewLog`` entry keeps the state before it, so undoing that entry
    (``undo_review``) puts the credited cards back exactly. Call it right after the drill's rating, in its
    transaction (``record_graded``). Returns how many cards were credited."""
    scheduler = scheduler_for(profile)
    if card.kind != Card.Kind.DRILL or not isinstance(scheduler, schedulers.FSRSScheduler):
        return 0
    deck = queueing.current_deck()
    tag = deck.tags.get(card.pk)
    if tag is None or tag[1] is None:
        return 0
    basis = [pk for concept in deck.concepts.builds_on(tag[1], tag[2]) for pk in deck.teachers.get(concept, ())]
    if not basis:
        return 0
    today = learner_today(profile, now)
    states = CardState.objects.filter(
        user=user, card_id__in=basis, suspended=False, last_review_day__lt=today, stability__isnull=False
    ).order_by("due", "pk")[: fire.CARDS]
    credits = []
    for state in states:
        memory = stored_memory(state)
        if memory is None:
            continue
        after, days = fire.credit(scheduler.fsrs, memory, today)
        due = today + timedelta(days=days)
        if due <= state.due:
            continue
        # A rating since it was read wins: the version must not have moved.
        updated = CardState.objects.filter(pk=state.pk, version=state.version).update(
            stability=after.stability, due=due, version=F("version") + 1
        )
        if updated:
            credits.append(
                Credit(card_id=state.card_id, prior_state=_prior(state), stability_after=after.stability, due_after=due)
            )
    if credits:
        log = ReviewLog.ledger.filter(user=user, card=card, review_day=today).latest("reviewed_at", "pk")
        for credit in credits:
            credit.review = log
        Credit.objects.bulk_create(credits)  # the rating has touched today: its recompute sees the credit too
    return len(credits)


def _log_fields(
    user: AbstractBaseUser, card_id: int, request: RatingRequest, now: datetime, today: date, duration: int
) -> dict[str, Any]:
    return {
        "user": user,
        "card_id": card_id,
        "quality": request.quality,
        "duration_ms": duration,
        "reviewed_at": now,
        "review_day": today,
        "source": request.source,
    }


def balanced_due(user: AbstractBaseUser, card: Card, due: date, today: date) -> date:
    """The due day after fuzz and load balancing (``cards.scheduling.fuzz``); two queries, only with fuzz on.

    The generator is seeded by learner, card and day, so a retried request lands on the same day.
    """
    low, high = fuzz.fuzz_range((due - today).days)
    if low == high:
        return due
    window = (
        CardState.objects.filter(user=user, suspended=False, last_reviewed_at__isnull=False)
        .filter(due__range=(today + timedelta(days=low), today + timedelta(days=high)))
        .exclude(card_id=card.pk)
        .order_by()
    )
    load = dict(window.values_list("due").annotate(n=Count("pk")).values_list("due", "n"))
    siblings: set[date] = set()
    if card.anchor:
        related = window.filter(card__note_id=card.note_id, card__anchor=card.anchor)
        siblings = set(related.values_list("due", flat=True))
    rng = random.Random(f"{user.pk}:{card.pk}:{today.isoformat()}")
    return today + timedelta(days=fuzz.balanced_interval((due - today).days, today, load, siblings, rng))


def _research_fields(state: CardState | None, today: date, scheduler: Scheduler, profile: Profile) -> dict[str, Any]:
    """The review log's research columns: days since the previous review, the interval it scheduled,
    and which scheduler (and FSRS parameter version) this review ran under."""
    seen = state is not None and state.last_review_day is not None and state.last_reviewed_at is not None
    return {
        "elapsed_days": (today - state.last_review_day).days if seen else None,
        "scheduled_days": max(0, (state.due - state.last_review_day).days) if seen else None,
        "scheduler": scheduler.name,
        "parameters_version": profile.fsrs_parameters_version if scheduler.name == "fsrs" else 0,
    }


def _rate_new(
    user: AbstractBaseUser, profile: Profile, request: RatingRequest, now: datetime, today: date, duration: int
) -> Outcome:
    visible = Card.objects.visible_to(user).annotate(new_today=_new_today(user, today))
    card = visible.filter(uuid=request.card_uuid).only("pk", "active", "kind", "note_id", "anchor").first()
    if card is None:
        return Outcome.NOT_FOUND
    if not card.active or not _rateable_by(card.kind, request.source):
        return Outcome.NOT_IN_QUEUE
    # A drill's verdict is not held back: the learner did the work, and the drill hub is not the queue.
    if request.source != ReviewLog.Source.GRADER and card.new_today >= profile.new_cards_per_day:
        return Outcome.NEW_LIMIT
    scheduler = scheduler_for(profile)
    step = scheduler.review(CardMemory(sm2=SM2State()), request.quality, today, False)
    after = step.memory.sm2
    memory = step.memory.fsrs if scheduler.name == "fsrs" else None
    easiness = Decimal(after.easiness_hundredths) / 100
    due = today + timedelta(days=step.interval or 0)
    if profile.fuzz:
        due = balanced_due(user, card, due, today)
    try:
        with transaction.atomic():
            if request.source != ReviewLog.Source.GRADER and not _below_new_limit(user, profile, today):
                return Outcome.NEW_LIMIT
            CardState.objects.create(
                user=user,
                card_id=card.pk,
                easiness=easiness,
                interval=after.interval,
                repetitions=after.repetitions,
                due=due,
                stability=memory and memory.stability,
                difficulty=memory and memory.difficulty,
                last_reviewed_at=now,
                last_review_day=today,
                needs_repeat=step.again_today,
                version=1,
            )
            ReviewLog.objects.create(
                **_log_fields(user, card.pk, request, now, today, duration),
                **_research_fields(None, today, scheduler, profile),
                was_new=True,
                easiness_before=Decimal("2.50"),
                interval_before=0,
                repetitions_before=0,
                easiness_after=easiness,
                interval_after=after.interval,
                repetitions_after=after.repetitions,
                due_after=due,
                prior_state=None,
            )
            touch(user.pk, today)
    except IntegrityError:
        return Outcome.DUPLICATE
    return Outcome.RECORDED


def _below_new_limit(user: AbstractBaseUser, profile: Profile, today: date) -> bool:
    """Today's new cards counted again under a lock on the learner's profile row, inside the rating's
    transaction: two ratings sent together at one below the limit are serialised here, so the second sees the
    first's answer and is refused (the count in the card's lookup alone let both land)."""
    Profile.objects.select_for_update().filter(pk=profile.pk).values_list("pk").first()
    answered = ReviewLog.objects.filter(user=user, review_day=today, was_new=True, is_same_day_repeat=False)
    return answered.count() < profile.new_cards_per_day


def _new_today(user: AbstractBaseUser, today: date) -> Coalesce:
    """Today's first answers of new cards, as the queue counts them, as a subquery of the card's lookup (no
    query of its own): at the learner's limit the queue offers no new card, and a rating sent anyway (a uuid
    from elsewhere) is refused the same."""
    logs = ReviewLog.objects.filter(user=user, review_day=today, was_new=True, is_same_day_repeat=False)
    counted = logs.order_by().values("user").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted), 0)


def undo_last(user: AbstractBaseUser, profile: Profile, now: datetime) -> Card | None:
    """Take back the learner's last self-rated review of today (``undo_review``).

    Returns the card whose review was undone, or None when there is nothing (or nothing safe) to undo.
    """
    today = learner_today(profile, now)
    log = (
        ReviewLog.objects.select_related("card")
        .filter(user=user, review_day=today, source=ReviewLog.Source.SELF)
        .order_by("-reviewed_at", "-pk")
        .first()
    )
    if log is None:
        return None
    return log.card if undo_review(user, log, now) else None


def undo_review(user: AbstractBaseUser, log: ReviewLog, now: datetime) -> bool:
    """Take back one review: restore its card's state and every state its credits moved, append its reversal.

    The ledger is append-only: the undone entry (and its ``Credit`` rows) stay, and a reversal entry
    (``ReviewLog.reverses``) makes both count as nothing for every reader (``ReviewLog.objects``); a second undo
    takes back the one before. Each restored state's version moves on, as after any change.

    All or nothing: if any of those states changed since the review (suspended, rated in another tab), nothing
    is restored and it returns False.
    """
    prior = log.prior_state
    states = CardState.objects.filter(user=user, card_id=log.card_id)
    with transaction.atomic():
        if prior is None:
            exact = states.filter(version=1).delete()[0] == 1
        else:
            exact = states.filter(version=prior["version"] + 1).update(**_restored(prior)) == 1
        credits = Credit.objects.filter(review=log) if log.source == ReviewLog.Source.GRADER else Credit.objects.none()
        for credit in credits.order_by("pk"):
            credited = CardState.objects.filter(user=user, card_id=credit.card_id)
            version = credit.prior_state["version"] + 1
            exact = exact and credited.filter(version=version).update(**_restored(credit.prior_state)) == 1
        if not exact:
            transaction.set_rollback(True)
            return False
        ReviewLog.ledger.create(**_reversal_fields(log, now))
        touch(user.pk, log.review_day)
    return True


def _restored(prior: dict[str, Any]) -> dict[str, Any]:
    """The update that puts a state back as ``_prior`` recorded it, its version moved on."""
    return {
        "easiness": Decimal(prior["easiness"]),
        "interval": prior["interval"],
        "repetitions": prior["repetitions"],
        "due": date.fromisoformat(prior["due"]),
        "lapses": prior["lapses"],
        "stability": prior.get("stability"),
        "difficulty": prior.get("difficulty"),
        "last_reviewed_at": _parse_dt(prior["last_reviewed_at"]),
        "last_review_day": date.fromisoformat(prior["last_review_day"]) if prior["last_review_day"] else None,
        "needs_repeat": prior["needs_repeat"],
        "version": F("version") + 1,
    }


def _reversal_fields(log: ReviewLog, now: datetime) -> dict[str, Any]:
    """The undone entry's fields, recorded at ``now`` and pointing back at it."""
    fields = {f.attname: getattr(log, f.attname) for f in ReviewLog._meta.concrete_fields if not f.primary_key}
    return {**fields, "reviewed_at": now, "reverses_id": log.pk}


def _parse_dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _state_for_action(user: AbstractBaseUser, card: Card, today: date) -> CardState:
    state, _created = CardState.objects.get_or_create(user=user, card=card, defaults={"due": today, "version": 1})
    return state


def suspend(user: AbstractBaseUser, profile: Profile, card: Card, now: datetime, suspended: bool = True) -> None:
    """Take a card out of every queue until unsuspended (Anki's suspend); its schedule is kept."""
    state = _state_for_action(user, card, learner_today(profile, now))
    CardState.objects.filter(pk=state.pk).update(suspended=suspended, version=F("version") + 1)


def bury(user: AbstractBaseUser, profile: Profile, card: Card, now: datetime) -> None:
    """Hide a card until the learner's next day; its schedule is untouched."""
    today = learner_today(profile, now)
    state = _state_for_action(user, card, today)
    CardState.objects.filter(pk=state.pk).update(buried_until=today + timedelta(days=1), version=F("version") + 1)


class ForecastDay(TypedDict):
    day: date
    count: int


@dataclass(frozen=True)
class DashboardSummary:
    today: date
    due: int
    new: int
    reviewed_today: int
    streak: int
    forecast: list[ForecastDay]


def streak_days(days_desc: list[date], today: date) -> int:
    """Consecutive learner days with a review, ending today (or yesterday: today is not over yet)."""
    seen = set(days_desc)
    day = today if today in seen else today - timedelta(days=1)
    count = 0
    while day in seen:
        count += 1
        day -= timedelta(days=1)
    return count


def dashboard_summary(user: AbstractBaseUser, profile: Profile, now: datetime) -> DashboardSummary:
    today = learner_today(profile, now)
    snap = queue_snapshot(user, profile, today)
    days = list(
        ReviewLog.objects.filter(user=user, review_day__gte=today - timedelta(days=STREAK_LOOKBACK_DAYS))
        .exclude(source=ReviewLog.Source.IMPORT)  # imported history is no streak here
        .order_by("-review_day")
        .values_list("review_day", flat=True)
        .distinct()
    )
    upcoming = dict(
        CardState.objects.filter(user=user, card__active=True, suspended=False, last_reviewed_at__isnull=False)
        .filter(due__gt=today, due__lte=today + timedelta(days=7))
        .order_by()
        .values_list("due")
        .annotate(n=Count("pk"))
        .values_list("due", "n")
    )
    forecast = [
        ForecastDay(day=today + timedelta(days=i), count=upcoming.get(today + timedelta(days=i), 0))
        for i in range(1, 8)
    ]
    return DashboardSummary(
        today=today,
        due=snap.due + snap.repeats,
        new=snap.new,
        reviewed_today=snap.reviewed_today,
        streak=streak_days(days, today),
        forecast=forecast,
    )


def save_card_note(user: AbstractBaseUser, profile: Profile, card: Card, user_note: str, suspended: bool) -> None:
    """Anki's edit, for a card shared by everyone: the learner's own note, and suspend on or off."""
    state = _state_for_action(user, card, learner_today(profile, timezone.now()))
    CardState.objects.filter(pk=state.pk).update(user_note=user_note, suspended=suspended, version=F("version") + 1)
