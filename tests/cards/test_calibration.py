"""The calibration page: both schedulers on the same time-split test folds, a reliability diagram,
true retention by month, and "not enough data yet" below 300 test points."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from django.test import TestCase
from django.urls import reverse

from cards import charts
from cards.models import ReviewLog
from cards.scheduling import calibration, evaluate
from cards.scheduling.fsrs6 import EPOCH
from teams.models import Membership, Team
from tests.cards.factories import make_card, make_user

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "revlog" / "revlog.csv"
QUALITY = {1: 1, 2: 3, 3: 4, 4: 5}


def fixture() -> list[evaluate.Review]:
    with open(FIXTURE, encoding="utf-8", newline="") as handle:
        return evaluate.read_revlog(handle)


def test_it_scores_both_schedulers_on_the_same_test_folds_as_the_command() -> None:
    reviews = fixture()
    report = calibration.report(reviews)
    everything = sorted(evaluate.test_points(reviews), key=lambda p: p.day)
    points = calibration.test_fold_points(everything)
    assert report.enough and report.test_points == len(points)
    # The first sixth (to a day boundary) only trains: the test folds are the later five sixths.
    assert 1681 - 1681 // 6 <= len(points) < 1681 - 1681 // 6 + 20
    assert min(p.day for p in points) == everything[1681 // 6].day
    assert report.scores["fsrs"] == evaluate.scores(points, [p.p_fsrs for p in points])
    assert report.scores["sm2"] == evaluate.scores(points, [p.p_sm2 for p in points])


def test_it_bins_predictions_in_tenths_for_the_reliability_diagram() -> None:
    points = [evaluate.TestPoint("a", 1, 1, 2, 0, y, 0, 0) for y in (1, 1, 0, 1)]
    bins = calibration.reliability(points, [0.95, 0.91, 0.12, 1.0])
    assert bins == [
        calibration.ReliabilityBin(predicted=0.12, recalled=0.0, count=1),
        calibration.ReliabilityBin(predicted=pytest.approx((0.95 + 0.91 + 1.0) / 3), recalled=1.0, count=3),
    ]


def test_it_says_not_enough_below_three_hundred_test_points() -> None:
    reviews = [r for r in fixture() if r.card_id < "c060"]
    report = calibration.report(reviews)
    assert 0 < report.test_points < 300
    assert not report.enough and report.scores == {} and report.months


def test_it_reports_true_retention_by_month() -> None:
    day = (date(2026, 1, 30) - EPOCH).days
    reviews = [evaluate.Review("a", day, 3), evaluate.Review("a", day + 1, 3), evaluate.Review("a", day + 3, 1)]
    months = calibration.monthly_retention(evaluate.test_points(reviews))
    assert [(m.month.isoformat(), m.retention, m.count) for m in months] == [
        ("2026-01-01", 1.0, 1),
        ("2026-02-01", 0.0, 1),
    ]


def test_it_draws_a_reliability_diagram_with_the_diagonal() -> None:
    svg = charts.reliability_diagram(
        {"SM-2": [charts.CalibrationPoint(0.5, 0.9, 10)], "FSRS-6": [charts.CalibrationPoint(0.9, 0.88, 40)]},
        chart_id="r",
        title="t <b>",
    )
    assert svg.count("<circle") == 2 and 'class="diagonal"' in svg and "t &lt;b&gt;" in svg
    assert "FSRS-6: predicted 0.90, recalled 0.88 (40 reviews)" in svg
    assert "No data yet." in charts.reliability_diagram({"SM-2": []}, chart_id="r", title="t")


class CalibrationViewTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC")
        self.client.force_login(self.user)

    def load(self, user: object, reviews: list[evaluate.Review]) -> None:
        cards: dict[str, object] = {}
        rows = []
        for n, review in enumerate(reviews):
            card = cards.get(review.card_id) or cards.setdefault(review.card_id, make_card())
            day = EPOCH + timedelta(days=review.day)
            at = datetime(day.year, day.month, day.day, 12, tzinfo=UTC) + timedelta(seconds=n)
            rows.append(
                ReviewLog(
                    user=user, card=card, quality=QUALITY[review.rating], reviewed_at=at, review_day=day,
                    easiness_before=2.5, interval_before=0, repetitions_before=0, easiness_after=2.5,
                    interval_after=1, repetitions_after=1, due_after=day,
                )
            )  # fmt: skip
        ReviewLog.objects.bulk_create(rows)

    def test_it_shows_the_scores_the_command_gives(self) -> None:
        self.load(self.user, fixture())
        response = self.client.get(reverse("cards:calibration"))
        report = calibration.report(fixture())
        self.assertContains(response, f'data-test-points="{report.test_points}"')
        self.assertContains(response, f"{report.scores['fsrs']['log_loss']:.4f}")
        self.assertContains(response, 'class="diagonal"')
        self.assertNotContains(response, "Not enough data yet")

    def test_it_says_not_enough_data_for_a_new_learner(self) -> None:
        response = self.client.get(reverse("cards:calibration"))
        self.assertContains(response, "Not enough data yet.")
        self.assertContains(response, 'data-test-points="0"')

    def test_it_scores_a_team_for_its_members_only(self) -> None:
        member = make_user(time_zone="UTC")
        team = Team.objects.create(name="T", slug="t-cal123", time_zone="UTC")
        Membership.objects.create(team=team, user=self.user, role=Membership.Role.OWNER)
        Membership.objects.create(team=team, user=member)
        self.load(member, fixture()[:1200])
        self.load(self.user, fixture()[1200:])
        response = self.client.get(reverse("teams:calibration", args=[team.slug]))
        self.assertContains(response, "T&#x27;s recall")
        self.assertContains(response, "data-test-points=")
        self.client.force_login(make_user())
        self.assertEqual(self.client.get(reverse("teams:calibration", args=[team.slug])).status_code, 404)
