"""The beat jobs as plain functions: season rollover, daily digest, rebuild (and its command)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from io import StringIO

from django.core import mail
from django.core.management import call_command

from cards.models import CardState
from teams import services, tasks
from teams.models import BoardPreference, DailyActivity, SeasonResult
from tests.cards.factories import make_user

from .base import TeamTestCase

MONDAY = date(2026, 3, 2)


class RolloverTests(TeamTestCase):
    def test_it_keeps_the_winners_of_the_finished_season_once(self) -> None:
        DailyActivity.objects.create(user=self.member, day=MONDAY + timedelta(days=2), xp=9)
        DailyActivity.objects.create(user=self.owner, day=MONDAY + timedelta(days=6), xp=4)
        DailyActivity.objects.create(user=self.owner, day=MONDAY + timedelta(days=7), xp=99)  # next season
        next_monday = datetime(2026, 3, 9, 4, 0, tzinfo=UTC)
        assert tasks.rollover_seasons(next_monday) == 2
        assert tasks.rollover_seasons(next_monday + timedelta(hours=1)) == 0
        rows = list(SeasonResult.objects.filter(team=self.team).values_list("season", "rank", "user_id", "xp"))
        assert rows == [(MONDAY, 1, self.member.pk, 9), (MONDAY, 2, self.owner.pk, 4)]

    def test_it_does_not_close_the_season_before_monday_four(self) -> None:
        DailyActivity.objects.create(user=self.member, day=MONDAY + timedelta(days=6), xp=9)
        tasks.rollover_seasons(datetime(2026, 3, 9, 3, 59, tzinfo=UTC))
        assert not SeasonResult.objects.filter(season=MONDAY).exists()


class DigestTests(TeamTestCase):
    def setUp(self) -> None:
        self.member.email = "max@example.com"
        self.member.save(update_fields=["email"])
        services.set_preferences(self.member, global_board=False, daily_digest=True)

    def test_it_emails_cards_due_and_the_team_place_once_a_day(self) -> None:
        now = datetime(2026, 3, 4, 9, 0, tzinfo=UTC)
        for card in self.cards[:3]:
            CardState.objects.create(user=self.member, card=card, due=date(2026, 3, 3), last_reviewed_at=now)
        DailyActivity.objects.create(user=self.owner, day=date(2026, 3, 3), xp=5)
        assert tasks.send_daily_digests(now) == 1
        assert tasks.send_daily_digests(now + timedelta(hours=1)) == 0
        assert len(mail.outbox) == 1
        message = mail.outbox[0]
        assert message.to == ["max@example.com"] and message.subject == "3 cards due today"
        assert "you are 2nd this week" in message.body and "Tensor Tamers" in message.body
        assert BoardPreference.objects.get(user=self.member).last_digest_on == date(2026, 3, 4)

    def test_it_waits_for_the_learners_morning_in_their_time_zone(self) -> None:
        assert tasks.send_daily_digests(datetime(2026, 3, 4, 7, 59, tzinfo=UTC)) == 0
        assert mail.outbox == []

    def test_it_sends_nothing_to_learners_who_did_not_opt_in(self) -> None:
        services.set_preferences(self.member, global_board=True, daily_digest=False)
        make_user("nomail")
        assert tasks.send_daily_digests(datetime(2026, 3, 4, 9, 0, tzinfo=UTC)) == 0


class RebuildCommandTests(TeamTestCase):
    def test_it_reports_drift_on_a_dry_run_and_repairs_it_for_real(self) -> None:
        self.review(self.member, self.cards[0], MONDAY, 5)
        DailyActivity.objects.filter(user=self.member).update(xp=40)
        out = StringIO()
        call_command("rebuild_boards", "--dry-run", stdout=out)
        assert "would change 1 stored learner day(s)" in out.getvalue()
        assert DailyActivity.objects.get(user=self.member).xp == 40
        call_command("rebuild_boards", stdout=out)
        assert DailyActivity.objects.get(user=self.member).xp == 1

    def test_it_runs_the_beat_task_function(self) -> None:
        self.review(self.member, self.cards[0], MONDAY, 5)
        DailyActivity.objects.all().delete()
        assert tasks.rebuild_boards_task() == {"learners": 1, "days_changed": 1, "redis_keys": 0}
        assert DailyActivity.objects.get(user=self.member).xp == 1


def test_it_has_no_missing_teams_migrations(db: None) -> None:
    out = StringIO()
    call_command("makemigrations", "teams", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
