"""The beat jobs as plain functions: season rollover, daily digest, rebuild (and its command)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from io import StringIO

from django.core import mail
from django.core.mail.backends.locmem import EmailBackend
from django.core.management import call_command
from django.test import Client

from cards import review
from cards.models import CardState
from teams import digests, services, tasks
from teams.models import BoardPreference, DailyActivity, SeasonResult
from tests.cards.factories import make_user

from .base import TeamTestCase

MONDAY = date(2026, 3, 2)


class FailingFor(EmailBackend):
    """The test outbox, refusing mail to fail@example.com as an SMTP server that is down would."""

    def send_messages(self, messages: list[mail.EmailMessage]) -> int:
        if any("fail@example.com" in m.to for m in messages):
            raise ConnectionRefusedError("smtp down")
        return super().send_messages(messages)


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


def confirmed_digest(user: object, email: str) -> None:
    """Opt in at ``email`` and confirm it through its signed link, as the learner would."""
    user.email = email  # type: ignore[attr-defined]
    user.save(update_fields=["email"])  # type: ignore[attr-defined]
    services.set_preferences(user, global_board=False, daily_digest=True)  # type: ignore[arg-type]
    digests.confirm(digests.confirm_token(user.pk, email))  # type: ignore[attr-defined]


class DigestTests(TeamTestCase):
    def setUp(self) -> None:
        confirmed_digest(self.member, "max@example.com")

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

    def test_it_links_absolutely_and_lets_the_learner_unsubscribe_in_one_click(self) -> None:
        with self.settings(SITE_URL="https://quiz.example.com"):
            assert tasks.send_daily_digests(datetime(2026, 3, 4, 9, 0, tzinfo=UTC)) == 1
        message = mail.outbox[0]
        assert "Review now: https://quiz.example.com/review/" in message.body
        link = message.extra_headers["List-Unsubscribe"].strip("<>")
        assert link.startswith("https://quiz.example.com/teams/digest/unsubscribe/") and link in message.body
        assert message.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        path = link.removeprefix("https://quiz.example.com")
        client = Client(enforce_csrf_checks=True)  # a mail client's one-click POST has no CSRF token
        assert client.get(path).status_code == 200 and BoardPreference.objects.get(user=self.member).daily_digest
        assert "data-unsubscribed" in client.post(path).content.decode()
        assert not BoardPreference.objects.get(user=self.member).daily_digest
        assert client.post(path[:-3] + "xyz/").status_code == 404

    def test_a_failed_send_blocks_no_one_and_is_tried_again_next_hour(self) -> None:
        other = make_user("other-digest")
        confirmed_digest(other, "fail@example.com")
        now = datetime(2026, 3, 4, 9, 0, tzinfo=UTC)
        with self.settings(EMAIL_BACKEND="tests.teams.test_tasks.FailingFor"):
            assert tasks.send_daily_digests(now) == 1
        assert [m.to for m in mail.outbox] == [["max@example.com"]]
        assert BoardPreference.objects.get(user=other).last_digest_on is None  # the day was given back
        assert tasks.send_daily_digests(now + timedelta(hours=1)) == 1  # and the next run sends it
        assert [m.to for m in mail.outbox] == [["max@example.com"], ["fail@example.com"]]

    def test_its_streak_is_the_dashboards(self) -> None:
        for day in (date(2026, 3, 2), date(2026, 3, 3)):
            self.review(self.member, self.cards[0], day)
        now = datetime(2026, 3, 4, 9, 0, tzinfo=UTC)
        tasks.send_daily_digests(now)
        profile = review.get_profile(self.member)
        assert (
            f"Current streak: {review.dashboard_summary(self.member, profile, now).streak} days." in mail.outbox[0].body
        )
        assert "Current streak: 2 days." in mail.outbox[0].body

    def test_it_waits_for_the_learners_morning_in_their_time_zone(self) -> None:
        assert tasks.send_daily_digests(datetime(2026, 3, 4, 7, 59, tzinfo=UTC)) == 0
        assert mail.outbox == []

    def test_it_sends_nothing_to_an_address_never_confirmed(self) -> None:
        """Issue 36: a learner typed someone else's address and the digest went there."""
        other = make_user("typed-a-stranger")
        other.email = "stranger@example.com"
        other.save(update_fields=["email"])
        services.set_preferences(other, global_board=False, daily_digest=True)
        assert tasks.send_daily_digests(datetime(2026, 3, 4, 9, 0, tzinfo=UTC)) == 1
        assert [m.to for m in mail.outbox] == [["max@example.com"]]

    def test_it_stops_when_the_account_moves_to_an_unconfirmed_address(self) -> None:
        self.member.email = "someone-else@example.com"
        self.member.save(update_fields=["email"])
        assert tasks.send_daily_digests(datetime(2026, 3, 4, 9, 0, tzinfo=UTC)) == 0

    def test_it_defangs_a_team_name_written_to_phish(self) -> None:
        """A team's name is the owner's free text: in the mail it is one line, and nothing a client would link."""
        self.team.name = (
            "Tensor\nYour account is locked: log in at https://evil.example/login \u202eor mail x@evil.example"
        )
        self.team.save(update_fields=["name"])
        DailyActivity.objects.create(user=self.member, day=date(2026, 3, 3), xp=5)
        tasks.send_daily_digests(datetime(2026, 3, 4, 9, 0, tzinfo=UTC))
        body = mail.outbox[0].body
        assert "evil.example" not in body and "https://evil" not in body and "@evil" not in body
        assert "\u202e" not in body
        line = next(line for line in body.splitlines() if line.startswith("Your team"))
        assert "Your account is locked[:] log in at https[:][/][/]evil[.]example[/]login" in line

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
