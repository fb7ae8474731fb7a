"""The daily rollup: the XP rules applied to real ReviewLog and Submission rows, live and rebuilt."""

from __future__ import annotations

from datetime import date, timedelta

from django.utils import timezone

from cards.models import Profile, ReviewLog
from graders import jobs
from graders.models import Drill, Submission
from graders.signals import verdict_recorded
from graders.status import Status
from graders.verdicts import SUBMISSIONS
from teams import boards, services
from teams.activity import clock_for, rebuild_user
from teams.models import DailyActivity
from teams.streaks import learner_day
from tests.cards.factories import make_card
from tests.conftest import published_tasks

from .base import TeamTestCase, at, refresh_message, run_like_a_worker

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


def announce(sub: Submission) -> None:
    """What the grader sends once a final verdict is committed (``graders.verdicts``), then what a worker runs."""
    with published_tasks() as sent:
        verdict_recorded.send_robust(
            sender=Submission,
            submission_id=sub.pk,
            user_id=sub.user_id,
            drill_id=sub.drill_id,
            kind=sub.kind,
            seed=sub.seed,
            status=sub.status,
        )
    run_like_a_worker(sent)


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

    def test_it_removes_the_xp_of_an_undone_review(self) -> None:
        log = self.review(self.member, self.cards[0], DAY, 5)
        self.review(self.member, self.cards[1], DAY, 5)
        with self.committed() as sent:
            log.delete()
        assert sent == [refresh_message(self.member, DAY)]
        assert DailyActivity.objects.get(user=self.member, day=DAY).xp == 1
        with self.committed():
            ReviewLog.objects.get(user=self.member, card=self.cards[1]).delete()
        assert not DailyActivity.objects.filter(user=self.member).exists()

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
        """A submission graded at a chosen time, announced the way the grader announces a final verdict
        (after the transaction that records it, from inside the grading worker)."""
        final = status != Status.QUEUED
        sub = Submission.objects.create(
            user=self.member,
            drill=drill,
            code="x",
            seed=1,
            drill_version="v1",
            kind=kind,
            status=status,
            verdict={"status": status} if final else None,
            queued_at=at(day, hour),
            finished_at=at(day, hour) if final else None,
        )
        if final:
            announce(sub)
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
        DailyActivity.objects.all().delete()
        Submission.objects.update(finished_at=at(DAY, 20) + timedelta(minutes=30))
        services.record_verdicts([Submission.objects.get().pk])
        next_day = DAY + timedelta(days=1)
        assert list(DailyActivity.objects.filter(user=self.member).values_list("day", "xp")) == [(next_day, 15)]

    def test_it_counts_a_verdict_recorded_by_update_through_record_verdicts(self) -> None:
        sub = self.submit(make_drill("matmul"), Status.QUEUED, DAY, 10)
        assert not DailyActivity.objects.filter(user=self.member).exists()
        Submission.objects.filter(pk=sub.pk).update(status=Status.ACCEPTED, verdict={}, finished_at=at(DAY, 10))
        services.record_verdicts([sub.pk])
        assert DailyActivity.objects.get(user=self.member, day=DAY).xp == 15

    def test_it_records_drill_xp_when_the_grader_finishes_an_accepted_submission(self) -> None:
        sub = self.submit(make_drill("einsum"), Status.QUEUED, DAY, 10)
        claim = jobs.claim(SUBMISSIONS, sub.pk, timezone.now())
        assert claim.job is not None
        verdict = {"status": Status.ACCEPTED, "passed": 1, "total": 1}
        finished = jobs.Finished(Status.ACCEPTED, {"verdict": verdict})
        with published_tasks() as sent, self.captureOnCommitCallbacks(execute=True):
            assert jobs.finish(SUBMISSIONS, claim.job, claim.token, finished)
        assert [(m.task, m.args, m.queue) for m in sent] == [("teams.tasks.record_verdicts", [[sub.pk]], "celery")]
        run_like_a_worker(sent)
        sub.refresh_from_db()
        clock = clock_for(self.member.pk)
        today = learner_day(sub.finished_at, clock.zone, clock.start_hour)
        stored = DailyActivity.objects.get(user=self.member)
        assert (stored.day, stored.xp, stored.drills_first_try) == (today, 15, 1)

    def test_it_recomputes_each_learner_day_of_a_batch_once(self) -> None:
        first = self.submit(make_drill("relu"), Status.QUEUED, DAY, 9)
        second = self.submit(make_drill("gelu"), Status.QUEUED, DAY, 10)
        later = self.submit(make_drill("silu"), Status.QUEUED, DAY + timedelta(days=1), 10)
        for sub in (first, second, later):
            Submission.objects.filter(pk=sub.pk).update(status=Status.ACCEPTED, verdict={}, finished_at=sub.queued_at)
        refreshed = services.record_verdicts([first.pk, second.pk, later.pk, first.pk])
        assert refreshed == 2  # two learner-days, three verdicts (one sent twice)
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
