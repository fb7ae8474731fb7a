"""Board order, periods, the global opt-in, and Redis as a cache the database can always rebuild."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from unittest import mock

from django.test import override_settings

from teams import boards, services
from teams.activity import restreak_from
from teams.models import BoardPreference, DailyActivity, Membership
from tests.cards.factories import make_user

from .base import TeamTestCase, at, redis_boards

MONDAY = date(2026, 3, 2)
NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)  # Wednesday of MONDAY's week


def names(entries: list[boards.BoardEntry]) -> list[str]:
    return [e.name for e in entries]


class BoardOrderTests(TeamTestCase):
    def day(self, user: object, day: date, xp: int, mature: int = 0, passed: int = 0, **extra: object) -> None:
        DailyActivity.objects.create(
            user=user, day=day, xp=xp, reviews=xp, mature_reviews=mature, mature_passed=passed, **extra
        )

    def test_it_ranks_a_learner_who_remembers_above_one_with_more_xp_who_forgets(self) -> None:
        self.day(self.owner, MONDAY, xp=10, mature=10, passed=10)  # score 10
        self.day(self.member, MONDAY, xp=12, mature=10, passed=5)  # score 12 * 0.75 = 9
        entries = boards.team_board(self.team, "week", now=NOW)
        assert names(entries) == ["olivia", "max"]
        assert [e.row.score for e in entries] == [10.0, 9.0]

    def test_it_breaks_a_tie_by_xp_then_by_who_joined_first(self) -> None:
        self.day(self.member, MONDAY, xp=20)
        self.day(self.owner, MONDAY, xp=20)
        assert names(boards.team_board(self.team, "week", now=NOW)) == ["olivia", "max"]
        later = self.member_membership.joined_at + timedelta(seconds=1)
        Membership.objects.filter(pk=self.owner_membership.pk).update(joined_at=later)
        assert names(boards.team_board(self.team, "week", now=NOW)) == ["max", "olivia"]

    def test_it_counts_only_this_seasons_days_on_the_weekly_board(self) -> None:
        self.day(self.owner, MONDAY - timedelta(days=1), xp=50)
        self.day(self.member, MONDAY, xp=5)
        week = boards.team_board(self.team, "week", now=NOW)
        assert [(e.name, e.row.xp) for e in week] == [("max", 5), ("olivia", 0)]
        assert names(boards.team_board(self.team, "all", now=NOW)) == ["olivia", "max"]

    def test_it_turns_the_season_at_monday_four_in_the_team_time_zone(self) -> None:
        self.team.time_zone = "Asia/Shanghai"  # UTC+8: Monday 04:00 there is Sunday 20:00 UTC
        self.day(self.member, MONDAY + timedelta(days=7), xp=5)
        before = datetime(2026, 3, 8, 19, 59, tzinfo=UTC)
        after = datetime(2026, 3, 8, 20, 0, tzinfo=UTC)
        assert boards.team_board(self.team, "week", now=before)[0].row.xp == 0
        assert boards.team_board(self.team, "week", now=after)[0].row.xp == 5

    def test_it_shows_the_streak_and_drills_first_try(self) -> None:
        for n in range(3):
            self.day(
                self.member,
                MONDAY + timedelta(days=n),
                xp=1,
                reviewed=True,
                drills_first_try=1,
                next_due=MONDAY + timedelta(days=n + 1),
            )
        restreak_from(self.member.pk, MONDAY)
        row = boards.team_board(self.team, "all", now=NOW)[0].row
        assert (row.streak, row.drills_first_try) == (3, 3)

    def test_it_shows_only_opted_in_learners_on_the_global_board(self) -> None:
        self.day(self.owner, MONDAY, xp=30)
        self.day(self.member, MONDAY, xp=10)
        services.set_preferences(self.member, global_board=True, daily_digest=False)
        assert names(boards.global_board("week", now=NOW)) == ["max"]
        services.set_preferences(self.member, global_board=False, daily_digest=False)
        assert boards.global_board("week", now=NOW) == []
        assert BoardPreference.objects.get(user=self.member).global_board is False


class RedisBoardTests(TeamTestCase):
    """Needs a real Redis (TEST_REDIS_URL, else redis://127.0.0.1:6379/14); skipped with the reason if none."""

    def play_a_week(self) -> None:
        third = make_user("tess", time_zone="UTC")
        Membership.objects.create(team=self.team, user=third)
        services.set_preferences(self.owner, global_board=True, daily_digest=False)
        today = datetime.now(tz=UTC).date() - timedelta(days=1)
        for n, card in enumerate(self.cards):
            self.review(self.owner, card, today, 5, interval_before=30)
            self.review(self.member, card, today, 4 if n % 2 else 2, interval_before=30)
            self.review(third, card, today - timedelta(days=1), 5)

    def boards_now(self) -> list[list[tuple[int, str, float, int, int]]]:
        out = []
        for period in ("week", "all"):
            for entries in (boards.team_board(self.team, period), boards.global_board(period)):
                out.append([(e.rank, e.name, e.row.score, e.row.xp, e.row.streak) for e in entries])
        return out

    def test_it_gives_identical_boards_after_flushing_redis_and_rebuilding(self) -> None:
        with redis_boards() as conn:
            self.play_a_week()
            live = self.boards_now()
            assert live[1][0][1] == "olivia" and conn.exists(f"{boards.prefix()}z:global:all")
            for key in conn.scan_iter(match=f"{boards.prefix()}*"):
                conn.delete(key)
            report = services.rebuild_all(dry_run=False)
            assert report["days_changed"] == 0 and report["redis_keys"] > 0
            assert self.boards_now() == live

    def test_it_gives_the_same_boards_from_redis_as_from_the_database(self) -> None:
        with redis_boards() as conn:
            self.play_a_week()
            cached = self.boards_now()
            assert conn.hlen(f"{boards.prefix()}rows:all") == 3
        assert self.boards_now() == cached  # REDIS_URL empty again: computed from the database

    def test_it_updates_the_sorted_set_on_each_review(self) -> None:
        with redis_boards() as conn:
            key = f"{boards.prefix()}z:team:{self.team.pk}:all"
            self.review(self.member, self.cards[0], datetime.now(tz=UTC).date() - timedelta(days=1), 5)
            assert conn.zscore(key, str(self.member.pk)) == 0.925  # 1 XP x (0.5 + 0.5 x 0.85)

    def test_it_reads_the_global_head_from_the_sorted_set_with_ties_at_the_cut(self) -> None:
        third = make_user("tess", time_zone="UTC")
        for user, xp in ((third, 3), (self.member, 3), (self.owner, 5)):  # tess opts in first
            DailyActivity.objects.create(user=user, day=MONDAY, xp=xp, reviews=xp)
            services.set_preferences(user, global_board=True, daily_digest=False)
        with mock.patch.object(boards, "GLOBAL_BOARD_SIZE", 2):
            from_db = names(boards.global_board("all", now=NOW))
            with redis_boards() as conn:
                boards.rebuild(now=NOW)
                assert conn.zcard(f"{boards.prefix()}z:global:all") == 3
                assert names(boards.global_board("all", now=NOW)) == from_db == ["olivia", "tess"]

    def test_one_publish_per_learner_at_a_time_so_an_older_total_cannot_land_last(self) -> None:
        with redis_boards() as conn:
            key = f"{boards.prefix()}z:team:{self.team.pk}:all"
            held = conn.lock(f"{boards.prefix()}lock:user:{self.member.pk}", timeout=10)
            assert held.acquire(blocking=False)
            DailyActivity.objects.create(user=self.member, day=MONDAY, xp=3, reviews=3)
            with mock.patch.object(boards, "PUBLISH_LOCK_WAIT", 0.2):
                boards.publish_user(self.member.pk, MONDAY)  # another worker is publishing: wait, then leave it
            assert conn.zscore(key, str(self.member.pk)) is None
            held.release()
            boards.publish_user(self.member.pk, MONDAY)
            expected = boards.compute_rows([self.member.pk], None)[self.member.pk].score
            assert expected > 0 and conn.zscore(key, str(self.member.pk)) == expected

    def test_a_learner_on_no_board_costs_a_publish_two_queries_and_writes_nothing(self) -> None:
        loner = make_user("lena", time_zone="UTC")
        DailyActivity.objects.create(user=loner, day=MONDAY, xp=4, reviews=4)
        with redis_boards() as conn:
            with self.assertNumQueries(2):  # memberships and the global opt-in: no board, nothing to compute
                boards.publish_user(loner.pk, MONDAY)
            assert conn.hget(f"{boards.prefix()}rows:all", str(loner.pk)) is None
            services.set_preferences(loner, global_board=True, daily_digest=False)  # on a board: published
            assert conn.zscore(f"{boards.prefix()}z:global:all", str(loner.pk)) is not None

    def test_it_falls_back_to_the_database_when_redis_is_down(self) -> None:
        DailyActivity.objects.create(user=self.member, day=MONDAY, xp=3, reviews=3)
        with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
            assert [e.row.xp for e in boards.team_board(self.team, "week", now=NOW)] == [3, 0]
            self.review(self.owner, self.cards[0], MONDAY, 5)  # a review still records with Redis down
        assert DailyActivity.objects.get(user=self.owner, day=MONDAY).xp == 1


def test_it_keys_weeks_by_monday() -> None:
    assert boards.global_season(at(MONDAY + timedelta(days=6), 23)) == MONDAY
