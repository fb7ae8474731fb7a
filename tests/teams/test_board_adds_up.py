"""The board's numbers equal what the learner's own submissions and reviews say, over a realistic week.

Computed both ways: the board (the live rollup, refreshed by the tasks that reviews and verdicts
queue, then ``compute_rows``) and straight from the rows (``ReviewLog``, and ``graders.rating.progress``, the
hub's own definition of solved and first try).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from cards.models import ReviewLog
from graders.kinds.verdicts import SUBMISSIONS
from graders.models import Drill, Submission
from graders.rating.progress import learner_facts
from jobs import lifecycle as jobs
from jobs.status import Status
from teams import boards
from teams.activity import rebuild_user, refresh_day
from teams.models import DailyActivity
from teams.xp import DRILL_ACCEPTED_XP, DRILL_FIRST_TRY_BONUS, GOOD_QUALITY, REVIEW_XP

from .base import TeamTestCase, at
from .test_activity import make_drill

MONDAY = date(2026, 3, 2)


class BoardAddsUpTests(TeamTestCase):
    def attempt(self, drill: Drill, status: str, sent: datetime, graded: datetime, kind: str = "submit") -> Submission:
        """A submission through the real lifecycle: queued when sent, claimed, finished when graded."""
        sub = Submission.objects.create(
            user=self.member, drill=drill, code="x", seed=1, drill_version="v1", kind=kind, queued_at=sent
        )
        claim = jobs.claim(SUBMISSIONS, sub.pk, sent)
        assert claim.job is not None
        with self.committed():
            finished = jobs.Finished(Status(status), {"verdict": {"status": status}})
            assert jobs.finish(SUBMISSIONS, claim.job, claim.token, finished, graded)
        return sub

    def live_week(self) -> None:
        """Seven days: reviews (good, hard, repeats, a grader's) and drills solved every which way."""
        drills = [make_drill(f"week-{n}") for n in range(6)]
        for offset in range(7):
            day = MONDAY + timedelta(days=offset)
            for index, card in enumerate(self.cards):
                quality = (offset + index) % 6
                self.review(self.member, card, day, quality, interval_before=offset * 5)
                if quality < 3:
                    self.review(self.member, card, day, 4, is_same_day_repeat=True)
        tue, wed, thu, fri, sat = (at(MONDAY + timedelta(days=n), 10) for n in range(1, 6))
        minute = timedelta(minutes=1)
        self.attempt(drills[0], Status.WRONG_ANSWER, tue, tue + minute)
        self.attempt(drills[0], Status.ACCEPTED, tue + 2 * minute, tue + 3 * minute)  # solved, not first try
        self.attempt(drills[1], Status.ACCEPTED, tue, tue + minute, kind="examples")  # practice
        self.attempt(drills[1], Status.ACCEPTED, wed, wed + minute)  # first try
        self.attempt(drills[2], Status.INTERNAL_ERROR, wed, wed + minute)  # ours: not an attempt
        self.attempt(drills[2], Status.ACCEPTED, wed + minute, wed + 2 * minute)  # first try
        # A slow wrong answer sent first, graded after the quick right one sent second: not a first try.
        self.attempt(drills[3], Status.ACCEPTED, thu + minute, thu + 2 * minute)
        Submission.objects.filter(drill=drills[3]).update(queued_at=thu + minute)
        slow = self.attempt(drills[3], Status.TIME_LIMIT, thu, thu + 10 * minute)
        assert slow.queued_at < Submission.objects.get(drill=drills[3], status=Status.ACCEPTED).queued_at
        refresh_day(self.member.pk, thu.date())
        self.attempt(drills[0], Status.ACCEPTED, fri, fri + minute)  # solved again: no more XP
        self.attempt(drills[4], Status.RUNTIME_ERROR, sat, sat + minute)  # attempted only
        self.attempt(drills[5], Status.REJECTED, sat, sat + minute)
        self.attempt(drills[5], Status.ACCEPTED, sat + minute, sat + 2 * minute)

    def test_the_board_equals_what_the_submissions_and_reviews_say(self) -> None:
        self.live_week()
        facts = learner_facts(self.member).values()
        solved = sum(f.accepted for f in facts)
        first_try = sum(f.first_attempt_accepted for f in facts)
        own = ReviewLog.objects.filter(user=self.member, source__in=["self", "output"], is_same_day_repeat=False)
        good_card_days = set(own.filter(quality__gte=GOOD_QUALITY).values_list("card_id", "review_day"))
        xp = REVIEW_XP * len(good_card_days) + DRILL_ACCEPTED_XP * solved + DRILL_FIRST_TRY_BONUS * first_try
        assert (solved, first_try) == (5, 2)

        row = boards.compute_rows([self.member.pk], None)[self.member.pk]
        assert (row.xp, row.drills_solved, row.drills_first_try, row.reviews) == (xp, solved, first_try, own.count())
        week = boards.compute_rows([self.member.pk], MONDAY)[self.member.pk]
        assert (week.xp, week.drills_solved, week.drills_first_try) == (xp, solved, first_try)
        entry = boards.team_board(self.team, "all", self.member.pk)
        mine = next(e for e in entry if e.is_you)
        assert (mine.row.xp, mine.row.drills_solved, mine.row.drills_first_try) == (xp, solved, first_try)
        rebuilt = rebuild_user(self.member.pk)
        assert sum(d.xp for d in rebuilt) == xp and sum(d.drills_first_try for d in rebuilt) == first_try

    def test_a_reviews_refresh_recomputes_the_days_drill_columns_too(self) -> None:
        """Two refreshes of one day running at once used to save each other's stale columns."""
        drill = make_drill("raced")
        day = MONDAY
        self.attempt(drill, Status.ACCEPTED, at(day, 10), at(day, 10) + timedelta(minutes=1))
        DailyActivity.objects.filter(user=self.member, day=day).update(drill_xp=0, drills_solved=0, drills_first_try=0)
        self.review(self.member, self.cards[0], day, 5)  # its refresh ran with the stale row
        stored = DailyActivity.objects.get(user=self.member, day=day)
        assert (stored.drill_xp, stored.drills_solved, stored.drills_first_try) == (15, 1, 1)
        assert stored.xp == 15 + REVIEW_XP
