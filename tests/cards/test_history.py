"""Review history import: the site's own review-log CSV back in as a learner's history (cards.history)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from unittest import mock

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase, override_settings
from django.urls import reverse

from cards import history, optimising, revlog
from cards import review as reviewing
from cards.models import ReviewLog
from teams import activity
from tests.cards.factories import make_card, make_user
from tests.cards.test_optimising import log_reviews

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


def exported(user: object) -> bytes:
    return "".join(revlog.csv_lines(revlog.revlog_rows(ReviewLog.objects.filter(user=user)))).encode()


class HistoryImportTests(TestCase):
    def setUp(self) -> None:
        self.elsewhere = make_user(time_zone="UTC")
        log_reviews(self.elsewhere, cards=3, reviews_each=4, start=date(2026, 1, 1))  # 12 reviews, 9 scored
        self.user = make_user(time_zone="UTC")

    def post(self, data: bytes) -> object:
        self.client.force_login(self.user)
        upload = SimpleUploadedFile("revlog.csv", data, content_type="text/csv")
        return self.client.post(reverse("cards:history_import"), {"file": upload}, follow=True)

    def test_a_learners_exported_log_becomes_their_history_once(self) -> None:
        data = exported(self.elsewhere)
        assert optimising.scored_count(self.user.pk) == 0
        response = self.post(data)
        self.assertContains(response, "Imported 12 reviews into your history.")
        logs = ReviewLog.objects.filter(user=self.user)
        assert logs.count() == 12 and set(logs.values_list("source", flat=True)) == {"import"}
        theirs = ReviewLog.objects.filter(user=self.elsewhere).order_by("card_id", "reviewed_at")
        mine = logs.order_by("card_id", "reviewed_at")
        fields = ("card_id", "reviewed_at", "review_day", "quality")
        assert list(mine.values_list(*fields)) == list(theirs.values_list(*fields))
        assert list(mine.values_list("was_new", flat=True)) == [True, False, False, False] * 3
        assert optimising.scored_count(self.user.pk) == 9  # the fit and calibration read it
        again = self.post(data)
        self.assertContains(again, "Imported 0 reviews into your history. Skipped: 12 already in your log")
        assert logs.count() == 12

    def test_importing_the_log_of_reviews_done_here_adds_nothing(self) -> None:
        summary = history.import_csv(self.elsewhere, exported(self.elsewhere), NOW)
        assert (summary.imported, summary.duplicates) == (0, 12)

    def test_unknown_cards_and_days_from_today_on_are_skipped_and_counted(self) -> None:
        card = make_card()
        today = (date(2026, 3, 10) - date(1970, 1, 1)).days
        data = (
            exported(self.elsewhere)
            + (
                f"00000000-0000-0000-0000-000000000000,{today - 5},3\n"
                f"{card.uuid},{today},3\n{card.uuid},{today - 1},1\n"
            ).encode()
        )
        summary = history.import_csv(self.user, data, NOW)
        assert (summary.imported, summary.unknown_cards, summary.not_before_today) == (13, 1, 1)
        added = ReviewLog.objects.get(user=self.user, card=card)
        assert (added.review_day, added.quality) == (date(2026, 3, 9), 1)

    def test_imported_reviews_earn_no_xp_count_on_no_board_and_make_no_streak(self) -> None:
        history.import_csv(self.user, exported(self.elsewhere), NOW)
        assert activity.rebuild_user(self.user.pk) == []
        day = activity.refresh_day(self.user.pk, date(2026, 1, 3))
        assert day is None or (day.xp, day.reviews, day.reviewed) == (0, 0, False)
        now = datetime(2026, 1, 7, 12, tzinfo=UTC)
        assert reviewing.dashboard_summary(self.user, reviewing.get_profile(self.user), now).streak == 0

    def test_a_bad_row_refuses_the_whole_file_and_writes_nothing(self) -> None:
        data = exported(self.elsewhere) + b"not-a-uuid,20000,3\n"
        response = self.post(data)
        self.assertContains(response, "Line 14 is not a review", status_code=400)
        assert not ReviewLog.objects.filter(user=self.user).exists()

    def test_it_refuses_a_team_export_of_several_learners(self) -> None:
        lines = ["card_id,day,rating,learner", f"a/{make_card().uuid},20000,3,a", f"b/{make_card().uuid},20000,3,b"]
        with self.assertRaisesMessage(history.HistoryImportError, "several learners"):
            history.read_csv("\n".join(lines).encode())

    def test_it_refuses_a_file_without_the_columns(self) -> None:
        self.assertContains(self.post(b"front,back\nx,y\n"), "missing: card_id, day, rating", status_code=400)

    @override_settings(ANKI_IMPORT_MAX_BYTES=100)
    def test_it_refuses_a_file_over_the_byte_cap(self) -> None:
        self.assertContains(self.post(exported(self.elsewhere)), "over the 100 byte limit", status_code=400)
        assert not ReviewLog.objects.filter(user=self.user).exists()

    def test_it_refuses_more_rows_than_the_cap(self) -> None:
        with (
            mock.patch.object(history, "MAX_ROWS", 5),
            self.assertRaisesMessage(history.HistoryImportError, "more than 5 reviews"),
        ):
            history.read_csv(exported(self.elsewhere))
