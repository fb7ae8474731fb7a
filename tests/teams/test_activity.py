"""The daily rollup: the XP rules applied to real ReviewLog and Submission rows, live and rebuilt."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from cards.models import Profile, ReviewLog, TouchedDay
from cards.touched import touch
from graders.kinds.verdicts import SUBMISSIONS
from graders.models import Drill, Submission
from jobs import lifecycle as jobs
from jobs import notify
from jobs.status import Status
from teams import boards, services
from teams.activity import clock_for, rebuild_user
from teams.models import DailyActivity
from teams.streaks import learner_day
from tests.cards.factories import make_card, make_note

from .base import TeamTestCase, at

DAY = date(2026, 3, 4)


def make_drill(slug: str) -> Drill:
    card = make_card(kind="drill")
    return Drill.objects.create(
        card=card,
        slug=slug,
        title=slug,
        entry_point="solution",
        reference_code="def solution(x):\n    return x\n",
        definition="",
        version="v1",
        source_path=f"drills/{slug}.toml",
    )


def fields(activity: DailyActivity) -> tuple[object, ...]:
    return (
        activity.day,
        activity.xp,
        activity.reviewed,
        activity.reviews,
        activity.mature_reviews,
        activity.mature_passed,
        activity.drills_solved,
        activity.drills_first_try,
        activity.next_due,
        activity.streak_state,
    )


class ReviewRollupTests(TeamTestCase):
    def test_it_rolls_up_xp_once_per_card_per_day(self) -> None:
        self.review(self.member, self.cards[0], DAY, 5)
        self.review(self.member, self.cards[0], DAY, 4)
        self.review(self.member, self.cards[1], DAY, 3)
        self.review(self.member, self.cards[1], DAY, 4, is_same_day_repeat=True)
        activity = DailyActivity.objects.get(user=self.member, day=DAY)
        assert (activity.xp, activity.reviews) == (1, 3)

    def test_it_records_mature_reviews_for_retention(self) -> None:
        self.review(self.member, self.cards[0], DAY, 3, interval_before=25)
        self.review(self.member, self.cards[1], DAY, 1, interval_before=30)
        self.review(self.member, self.cards[2], DAY, 5, interval_before=20)
        activity = DailyActivity.objects.get(user=self.member, day=DAY)
        assert (activity.mature_reviews, activity.mature_passed) == (2, 1)

    def test_it_gives_no_review_xp_for_a_grader_review(self) -> None:
        self.review(self.member, self.cards[0], DAY, 5, source="grader")
        assert DailyActivity.objects.get(user=self.member, day=DAY).xp == 0

    def test_it_gives_nothing_for_reviews_of_the_learners_own_private_cards(self) -> None:
        """Self-written imported cards earned 400 XP in 3 s (issue 36, item 7): they count for no board."""
        own = make_card(note=make_note(owner=self.member))
        self.review(self.member, own, DAY, 5)
        self.review(self.member, self.cards[0], DAY, 5)
        activity = DailyActivity.objects.get(user=self.member, day=DAY)
        assert (activity.xp, activity.reviews) == (1, 1)
        assert [(a.xp, a.reviews) for a in rebuild_user(self.member.pk)] == [(1, 1)]

    def test_it_removes_the_xp_of_an_undone_review(self) -> None:
        """Undo appends a reversal (``cards.review.undo_last``): the entry and its reversal count as nothing."""
        log = self.review(self.member, self.cards[0], DAY, 5)
        self.review(self.member, self.cards[1], DAY, 5)
        with self.committed():
            self.reverse(log)
        assert DailyActivity.objects.get(user=self.member, day=DAY).xp == 1
        with self.committed():
            self.reverse(ReviewLog.objects.get(user=self.member, card=self.cards[1]))
        assert not DailyActivity.objects.filter(user=self.member).exists()
        assert ReviewLog.ledger.filter(user=self.member).count() == 4  # nothing deleted

    def reverse(self, log: ReviewLog) -> None:
        ReviewLog.ledger.create(
            user=log.user,
            card=log.card,
            quality=log.quality,
            reviewed_at=log.reviewed_at,
            review_day=log.review_day,
            easiness_before=log.easiness_before,
            interval_before=log.interval_before,
            repetitions_before=log.repetitions_before,
            easiness_after=log.easiness_after,
            interval_after=log.interval_after,
            repetitions_after=log.repetitions_after,
            due_after=log.due_after,
            reverses=log,
        )
        touch(log.user_id, log.review_day)

    def test_it_keeps_the_rollup_per_learner_day_in_their_time_zone(self) -> None:
        # 02:00 UTC on the 5th is still the 4th before 04:00: the review flow stores review_day = the 4th.
        self.review(self.member, self.cards[0], DAY, 5, reviewed_at=at(DAY + timedelta(days=1), 2))
        assert list(DailyActivity.objects.filter(user=self.member).values_list("day", flat=True)) == [DAY]

    def test_it_rebuilds_exactly_the_rows_the_live_path_wrote(self) -> None:
        for offset, quality in enumerate([5, 4, 1, 3, 5]):
            self.review(self.member, self.cards[offset % 4], DAY + timedelta(days=offset), quality, interval_before=22)
        live = sorted(fields(a) for a in DailyActivity.objects.filter(user=self.member))
        assert sorted(fields(a) for a in rebuild_user(self.member.pk)) == live
        report = services.rebuild_all(dry_run=True)
        assert report["days_changed"] == 0


class DrillRollupTests(TeamTestCase):
    def submit(self, drill: Drill, status: str, day: date, hour: int, kind: str = "submit") -> Submission:
        """A submission graded at a chosen time through the grader's lifecycle (claim, then finish in one
        transaction that marks the learner day of an accepted attempt), then beat's tick."""
        sub = Submission.objects.create(
            user=self.member, drill=drill, code="x", seed=1, drill_version="v1", kind=kind, queued_at=at(day, hour)
        )
        if status != Status.QUEUED:
            claim = jobs.claim(SUBMISSIONS, sub.pk, at(day, hour))
            assert claim.job is not None
            with self.committed():
                finished = jobs.Finished(Status(status), {"verdict": {"status": status}})
                assert jobs.finish(SUBMISSIONS, claim.job, claim.token, finished, at(day, hour))
        return sub

    def test_it_pays_fifteen_for_a_drill_accepted_on_the_first_try(self) -> None:
        self.submit(make_drill("add-one"), Status.ACCEPTED, DAY, 10)
        activity = DailyActivity.objects.get(user=self.member, day=DAY)
        assert (activity.xp, activity.drills_solved, activity.drills_first_try) == (15, 1, 1)

    def test_it_pays_ten_after_a_wrong_answer_and_nothing_for_run_examples(self) -> None:
        drill = make_drill("softmax")
        self.submit(drill, Status.ACCEPTED, DAY, 9, kind="examples")
        self.submit(drill, Status.WRONG_ANSWER, DAY, 10)
        self.submit(drill, Status.ACCEPTED, DAY, 11)
        self.submit(drill, Status.ACCEPTED, DAY + timedelta(days=1), 11)
        assert list(DailyActivity.objects.filter(user=self.member).values_list("day", "xp")) == [(DAY, 10)]

    def test_it_puts_a_drill_on_the_learner_day_of_their_own_time_zone(self) -> None:
        Profile.objects.filter(user=self.member).update(time_zone="Asia/Shanghai")
        # 20:30 UTC is 04:30 the next morning in Shanghai: the next learner day there, not in UTC.
        self.submit(make_drill("relu"), Status.ACCEPTED, DAY, 20)
        next_day = DAY + timedelta(days=1)
        assert list(DailyActivity.objects.filter(user=self.member).values_list("day", "xp")) == [(next_day, 15)]

    def test_it_marks_the_learner_day_in_the_transaction_that_records_the_verdict(self) -> None:
        sub = self.submit(make_drill("einsum"), Status.QUEUED, DAY, 10)
        claim = jobs.claim(SUBMISSIONS, sub.pk, timezone.now())
        assert claim.job is not None
        finished = jobs.Finished(Status.ACCEPTED, {"verdict": {"status": Status.ACCEPTED, "passed": 1, "total": 1}})
        with self.captureOnCommitCallbacks() as callbacks:
            assert jobs.finish(SUBMISSIONS, claim.job, claim.token, finished)
        # Nothing of the fact waits for the commit: the mark is a row of the same transaction. The one callback is
        # the wake-up for a submit request waiting on the verdict (jobs.notify), which carries no fact.
        assert [callback.func for callback in callbacks] == [notify._announce]
        sub.refresh_from_db()
        clock = clock_for(self.member.pk)
        today = learner_day(sub.finished_at, clock.zone, clock.start_hour)
        assert list(TouchedDay.objects.values_list("user_id", "day")) == [(self.member.pk, today)]
        assert services.refresh_touched_days() == 1
        stored = DailyActivity.objects.get(user=self.member)
        assert (stored.day, stored.xp, stored.drills_first_try) == (today, 15, 1)

    def test_a_verdict_that_rolls_back_marks_nothing(self) -> None:
        sub = self.submit(make_drill("einsum"), Status.QUEUED, DAY, 10)
        claim = jobs.claim(SUBMISSIONS, sub.pk, timezone.now())
        assert claim.job is not None
        finished = jobs.Finished(Status.ACCEPTED, {"verdict": {"status": Status.ACCEPTED}})
        with pytest.raises(RuntimeError), transaction.atomic():
            assert jobs.finish(SUBMISSIONS, claim.job, claim.token, finished)
            assert TouchedDay.objects.count() == 1
            raise RuntimeError("the commit failed")
        assert not TouchedDay.objects.exists()
        assert Submission.objects.get(pk=sub.pk).status == Status.RUNNING

    def test_it_recomputes_each_marked_learner_day_once(self) -> None:
        with transaction.atomic():  # two verdicts on one day, one the next: two marks
            for slug, day in (("relu", DAY), ("gelu", DAY), ("silu", DAY + timedelta(days=1))):
                sub = self.submit(make_drill(slug), Status.QUEUED, day, 10)
                claim = jobs.claim(SUBMISSIONS, sub.pk, at(day, 10))
                assert claim.job is not None
                finished = jobs.Finished(Status.ACCEPTED, {"verdict": {"status": Status.ACCEPTED}})
                assert jobs.finish(SUBMISSIONS, claim.job, claim.token, finished, at(day, 10))
        assert TouchedDay.objects.count() == 2
        assert services.refresh_touched_days() == 2
        assert services.refresh_touched_days() == 0
        days = DailyActivity.objects.filter(user=self.member).order_by("day").values_list("day", "drills_solved", "xp")
        assert list(days) == [(DAY, 2, 30), (DAY + timedelta(days=1), 1, 15)]

    def test_it_ignores_verdicts_that_earn_nothing(self) -> None:
        drill = make_drill("gather")
        self.submit(drill, Status.WRONG_ANSWER, DAY, 9)
        self.submit(drill, Status.ACCEPTED, DAY, 10, kind="examples")
        assert not DailyActivity.objects.filter(user=self.member).exists()


class StreakRollupTests(TeamTestCase):
    def test_it_shows_a_streak_that_a_day_left_undone_breaks(self) -> None:
        card = self.cards[0]
        self.review(self.member, card, DAY, 5, due_after=DAY + timedelta(days=1))
        self.review(self.member, card, DAY + timedelta(days=1), 5, due_after=DAY + timedelta(days=2))
        on_day_two = boards.current_streaks([self.member.pk], at(DAY + timedelta(days=2)))
        on_day_three = boards.current_streaks([self.member.pk], at(DAY + timedelta(days=3)))
        assert (on_day_two[self.member.pk], on_day_three[self.member.pk]) == (2, 0)

    def test_it_keeps_the_streak_over_a_day_with_nothing_due(self) -> None:
        card = self.cards[0]
        self.review(self.member, card, DAY, 5, due_after=DAY + timedelta(days=6))
        self.review(self.member, card, DAY + timedelta(days=6), 5, due_after=DAY + timedelta(days=20))
        assert boards.current_streaks([self.member.pk], at(DAY + timedelta(days=8)))[self.member.pk] == 2
