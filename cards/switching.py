"""Switching a learner between SM-2 and FSRS: what the switch would do, shown first, then doing it.

Runs in the web process (the settings pages). One plan serves both: the preview page renders it and
the confirmed switch applies exactly that plan, inside one transaction.

1. To FSRS: every card the learner has seen gets its FSRS memory state from its full review history
   (the way Anki switches), or from its SM-2 ease and interval where the history does not start at
   the card's first review; its due day becomes the last review day plus FSRS's interval at the
   learner's desired retention.
2. To SM-2: SM-2's state kept moving under FSRS (``cards.scheduling.schedulers``), so each card's
   due day becomes its last review day plus SM-2's interval again.
3. Cards that the switch makes due, and that were not due today anyway, are the backlog: they are
   spread over at most seven days from today, the least likely to be recalled first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cards.models import CardState, Profile, ReviewLog, Scheduler
from cards.queueing import new_card_count
from cards.review import get_profile, learner_today, memory_from, stored_memory
from cards.scheduling import fsrs6, schedulers, workload

PREVIEW_DAYS = 7


@dataclass(frozen=True)
class DayCount:
    day: date
    before: int
    after: int


@dataclass
class SwitchPlan:
    """What switching to ``target`` does to each seen card, and the next days' due counts before and after."""

    target: str
    today: date
    cards: int = 0
    from_history: int = 0
    from_sm2: int = 0
    backlog: int = 0
    days: list[DayCount] = field(default_factory=list)
    # state pk -> (stability, difficulty, due); stability and difficulty are None when switching to SM-2.
    changes: dict[int, tuple[float | None, float | None, date]] = field(default_factory=dict)

    @property
    def due_today_before(self) -> int:
        return self.days[0].before if self.days else 0

    @property
    def due_today_after(self) -> int:
        return self.days[0].after if self.days else 0


def _histories(user: AbstractBaseUser) -> dict[int, list[tuple[date, int, bool]]]:
    rows = (
        ReviewLog.objects.filter(user=user)
        .order_by("card_id", "reviewed_at", "pk")
        .values_list("card_id", "review_day", "quality", "was_new")
    )
    histories: dict[int, list[tuple[date, int, bool]]] = defaultdict(list)
    for card_id, day, quality, was_new in rows.iterator(chunk_size=5000):
        histories[card_id].append((day, quality, was_new))
    return histories


def _seen_states(user: AbstractBaseUser) -> list[CardState]:
    return list(
        CardState.objects.filter(user=user, last_reviewed_at__isnull=False, last_review_day__isnull=False).only(
            "pk", "user_id", "card_id", "easiness", "interval", "repetitions", "due", "last_reviewed_at",
            "last_review_day", "suspended", "version", "stability", "difficulty",
        )
    )  # fmt: skip


def plan_switch(user: AbstractBaseUser, profile: Profile, target: str, now: datetime) -> SwitchPlan:
    """Steps 1-3 of the module docstring, without writing anything."""
    today = learner_today(profile, now)
    plan = SwitchPlan(target=target, today=today)
    fsrs = schedulers.for_learner("fsrs", profile.fsrs_parameters, float(profile.desired_retention))
    assert isinstance(fsrs, schedulers.FSRSScheduler)
    histories = _histories(user) if target == Scheduler.FSRS else {}
    targets: list[tuple[object, date, float]] = []
    memories: dict[int, tuple[float | None, float | None]] = {}
    states = _seen_states(user)
    for state in states:
        plan.cards += 1
        due, recall, memory = _target_due(state, target, fsrs, histories.get(state.card_id, []), today)
        if memory is not None:
            usable = bool(histories.get(state.card_id)) and histories[state.card_id][0][2]
            plan.from_history += usable
            plan.from_sm2 += not usable
        memories[state.pk] = (memory.stability, memory.difficulty) if memory else (None, None)
        targets.append((state.pk, due, recall))
    newly_due = [item for item, state in zip(targets, states, strict=True) if item[1] <= today < state.due]
    spread = fsrs6.spread_backlog(newly_due, today)
    plan.backlog = len(newly_due)
    for pk, due, _ in targets:
        plan.changes[pk] = (*memories[pk], spread.get(pk, due))
    plan.days = _day_counts(states, plan, today)
    return plan


def _target_due(
    state: CardState,
    target: str,
    fsrs: schedulers.FSRSScheduler,
    history: list[tuple[date, int, bool]],
    today: date,
) -> tuple[date, float, fsrs6.Memory | None]:
    """The card's due day under ``target``, its recall probability today, and its FSRS memory."""
    assert state.last_review_day is not None
    if target == Scheduler.SM2:
        elapsed = (today - state.last_review_day).days
        return state.last_review_day + timedelta(days=state.interval), 0.9 ** (elapsed / max(state.interval, 1)), None
    memory = memory_from(fsrs, state, history)
    if memory is None:  # seen without a review (a leech's drill): FSRS will meet it as new
        return state.due, 1.0, None
    days = fsrs6.interval(fsrs.fsrs, memory.stability)
    return memory.last_day + timedelta(days=days), fsrs6.retrievability(fsrs.fsrs, memory, today), memory


def _day_counts(states: list[CardState], plan: SwitchPlan, today: date) -> list[DayCount]:
    """Due counts for today (overdue included) and the next days, now and after the switch (suspended left out)."""
    before: dict[date, int] = defaultdict(int)
    after: dict[date, int] = defaultdict(int)
    for state in states:
        if state.suspended:
            continue
        before[max(state.due, today)] += 1
        after[max(plan.changes[state.pk][2], today)] += 1
    days = [today + timedelta(days=offset) for offset in range(PREVIEW_DAYS)]
    return [DayCount(day=day, before=before[day], after=after[day]) for day in days]


def switch_scheduler(
    user: AbstractBaseUser, profile: Profile, target: str, now: datetime, chosen: bool = True
) -> SwitchPlan:
    """Apply the plan and the learner's choice together, with the learner's states locked so no rating
    lands in between; each changed state's version moves, so a rating form opened before the switch
    is refused as stale instead of recording against the old schedule."""
    if target not in Scheduler.values:
        raise ValueError(f"unknown scheduler {target!r}")
    with transaction.atomic():
        list(CardState.objects.select_for_update().filter(user=user).values_list("pk", flat=True))
        plan = plan_switch(user, profile, target, now)
        changed = []
        for state in _seen_states(user):
            stability, difficulty, due = plan.changes[state.pk]
            state.due, state.version = due, state.version + 1
            if target == Scheduler.FSRS:
                state.stability, state.difficulty = stability, difficulty
            changed.append(state)
        fields = ["due", "version"] + (["stability", "difficulty"] if target == Scheduler.FSRS else [])
        CardState.objects.bulk_update(changed, fields, batch_size=1000)
        profile.scheduler = target
        profile.scheduler_switched_at = now
        profile.scheduler_chosen = profile.scheduler_chosen or chosen
        profile.save(update_fields=["scheduler", "scheduler_switched_at", "scheduler_chosen"])
    return plan


def follow_team_default(users: Iterable[AbstractBaseUser], target: str, now: datetime) -> int:
    """A team's default scheduler reaches the learners who never chose one (the teams app picks
    which members follow which team); each switch is the same plan as a learner's own, backlog
    spread included. Returns how many learners switched."""
    switched = 0
    for user in users:
        profile = get_profile(user)
        if profile.scheduler_chosen or profile.scheduler == target:
            continue
        switch_scheduler(user, profile, target, now, chosen=False)
        switched += 1
    return switched


def workload_preview(user: AbstractBaseUser, profile: Profile, now: datetime) -> list[workload.Workload]:
    """Reviews a day for the next 30 days at each desired retention, on the learner's own cards:
    their FSRS memory states (stored, else from the history as a switch computes them) and the
    new cards their daily limit would bring."""
    today = learner_today(profile, now)
    fsrs = schedulers.for_learner("fsrs", profile.fsrs_parameters, float(profile.desired_retention))
    assert isinstance(fsrs, schedulers.FSRSScheduler)
    states = [state for state in _seen_states(user) if not state.suspended]
    stored = {state.pk: stored_memory(state) for state in states}
    histories = _histories(user) if None in stored.values() else {}
    cards = []
    for state in states:
        memory = stored[state.pk] or memory_from(fsrs, state, histories.get(state.card_id, []))
        cards.append(workload.SimCard(memory=memory, due=state.due))
    new = new_card_count(user.pk, today)
    return workload.compare(cards, new, profile.new_cards_per_day, today, profile.fsrs_parameters)
