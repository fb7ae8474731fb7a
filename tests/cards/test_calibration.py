"""The calibration page: both schedulers on the same time-split test folds, a reliability diagram,
true retention by month, and "not enough data yet" below 300 test points."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import TestCase, override_settings
from django.urls import reverse
from django.utils.formats import date_format

from cards import calibrating, charts, tasks
from cards.models import Optimisation, Profile, ReviewLog
from cards.scheduling import calibration, evaluate, fsrs6, synthetic
from cards.scheduling.fsrs6 import EPOCH
from cards.touched import touch
from teams import tasks as team_tasks
from teams.models import Membership, Team
from tests.cards.factories import make_card, make_user
from tests.conftest import published_tasks

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


def test_every_row_is_scored_on_the_same_points_beside_the_baselines() -> None:
    reviews = fixture()
    report = calibration.report(reviews)
    everything = sorted(evaluate.test_points(reviews), key=lambda p: p.day)
    points = calibration.test_fold_points(everything)
    assert list(report.scores) == ["fsrs", "sm2", "avg", "moving_avg"]  # the defaults are the learner's FSRS
    baseline = evaluate.baselines(reviews, points)
    assert report.scores["moving_avg"] == evaluate.scores(points, baseline["moving_avg"])
    assert report.scores["avg"] == evaluate.scores(points, baseline["avg"])
    assert report.scope == "folds" and report.pending is None
    # On this log the moving average predicts better than FSRS at its defaults, and the report says so.
    assert report.beats_moving_avg is False


FITTED = synthetic.distinct_parameters()


def test_fitted_parameters_are_scored_only_on_reviews_after_their_training_window() -> None:
    reviews = fixture()
    everything = sorted(evaluate.test_points(reviews), key=lambda p: p.day)
    split_day = everything[len(everything) * 7 // 10].day
    report = calibration.report(reviews, FITTED, split_day)
    fitted = [p for p in evaluate.test_points(reviews, fsrs6.scheduler(FITTED)) if p.day >= split_day]
    fitted.sort(key=lambda p: p.day)
    assert report.scope == "held_out" and report.held_out_from == EPOCH + timedelta(days=split_day)
    assert report.test_points == len(fitted) >= calibration.MIN_TEST_POINTS
    assert list(report.scores) == list(calibration.PREDICTORS)
    assert report.scores["fsrs"] == evaluate.scores(fitted, [p.p_fsrs for p in fitted])
    tail = [p for p in everything if p.day >= split_day]
    assert report.scores["fsrs_default"] == evaluate.scores(tail, [p.p_fsrs for p in tail])
    assert report.scores["sm2"] == evaluate.scores(tail, [p.p_sm2 for p in tail])


def test_fitted_parameters_wait_for_enough_held_out_reviews_and_the_rest_are_scored_without_them() -> None:
    reviews = fixture()
    days = sorted(p.day for p in evaluate.test_points(reviews))
    for split_day in (days[-100], None):  # 100 reviews after the fit; a fit whose window is unknown
        report = calibration.report(reviews, FITTED, split_day)
        assert report.scope == "folds" and report.enough
        assert report.pending == (100 if split_day else 0)
        assert "fsrs" not in report.scores and list(report.scores) == ["fsrs_default", "sm2", "avg", "moving_avg"]


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


def load(user: object, reviews: list[evaluate.Review]) -> None:
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


class CalibrationViewTests(TestCase):
    def setUp(self) -> None:
        cache.clear()
        self.user = make_user(time_zone="UTC")
        self.client.force_login(self.user)

    def test_it_shows_the_scores_the_command_gives(self) -> None:
        load(self.user, fixture())
        tasks.calibrate_learner(self.user.pk)
        response = self.client.get(reverse("cards:calibration"))
        report = calibration.report(fixture())
        self.assertContains(response, f'data-test-points="{report.test_points}"')
        self.assertContains(response, f"{report.scores['fsrs']['log_loss']:.4f}")
        self.assertContains(response, 'class="diagonal"')
        self.assertNotContains(response, "Not enough data yet")

    def test_it_scores_a_kept_fit_only_from_its_split_day_and_says_so(self) -> None:
        load(self.user, fixture())
        days = sorted(p.day for p in evaluate.test_points(fixture()))
        split_day = EPOCH + timedelta(days=days[len(days) * 7 // 10])
        Profile.objects.filter(user=self.user).update(fsrs_parameters=list(FITTED), fsrs_parameters_version=1)
        now = datetime(2026, 3, 1, tzinfo=UTC)
        Optimisation.objects.create(
            user=self.user,
            created_at=now,
            finished_at=now,
            status="done",
            kept=True,
            split_day=split_day,
            parameters=list(FITTED),
        )
        tasks.calibrate_learner(self.user.pk)
        response = self.client.get(reverse("cards:calibration"))
        self.assertContains(response, 'data-scope="held_out"')
        self.assertContains(response, f"reviews before {date_format(split_day)}")  # the site's one date format
        for key in calibration.PREDICTORS:
            self.assertContains(response, f'data-scheduler="{key}"')
        self.assertContains(response, "FSRS-6 (your fitted parameters)")
        self.assertContains(response, "data-beats-moving-avg=")

    def test_parameters_no_kept_fit_produced_are_never_scored_in_sample(self) -> None:
        # The learner's parameters came from somewhere other than the kept fit on record (set by hand, or an
        # older fit's): their training window is unknown, so the split day of that record must not open a
        # held-out tail for them; the page scores the folds with the defaults and waits.
        load(self.user, fixture())
        days = sorted(p.day for p in evaluate.test_points(fixture()))
        early = EPOCH + timedelta(days=days[len(days) // 2])  # half the log after it: in sample if used
        Profile.objects.filter(user=self.user).update(fsrs_parameters=list(FITTED), fsrs_parameters_version=2)
        now = datetime(2026, 3, 1, tzinfo=UTC)
        Optimisation.objects.create(
            user=self.user, created_at=now, finished_at=now, status="done", kept=True, split_day=early,
            parameters=[w * 1.01 for w in FITTED],
        )  # fmt: skip
        profile = Profile.objects.get(user=self.user)
        subject = calibrating.learner_subject(profile)
        assert calibrating.fitted_before(subject) is None
        report = calibrating.compute(subject).contexts[settings.LANGUAGE_CODE]["report"]
        assert report.scope == "folds" and report.pending == 0 and "fsrs" not in report.scores
        # The same record with the parameters it produced opens the tail from its split day, and no earlier.
        Optimisation.objects.filter(user=self.user).update(parameters=list(FITTED))
        assert calibrating.fitted_before(subject) == (early - EPOCH).days
        report = calibrating.compute(subject).contexts[settings.LANGUAGE_CODE]["report"]
        assert report.scope == "held_out" and report.held_out_from == early
        every = sorted(evaluate.test_points(fixture(), fsrs6.scheduler(FITTED)), key=lambda p: p.day)
        fitted = [p for p in every if p.day >= (early - EPOCH).days]
        assert report.test_points == len(fitted)
        assert report.scores["fsrs"] == evaluate.scores(fitted, [p.p_fsrs for p in fitted])

    def test_it_says_not_enough_data_for_a_new_learner(self) -> None:
        tasks.calibrate_learner(self.user.pk)
        response = self.client.get(reverse("cards:calibration"))
        self.assertContains(response, "Not enough data yet.")
        self.assertContains(response, 'data-test-points="0"')

    def test_it_scores_a_team_for_its_members_only(self) -> None:
        member = make_user(time_zone="UTC")
        team = Team.objects.create(name="T", slug="t-cal123", time_zone="UTC")
        Membership.objects.create(team=team, user=self.user, role=Membership.Role.OWNER)
        Membership.objects.create(team=team, user=member)
        load(member, fixture()[:1200])
        load(self.user, fixture()[1200:])
        team_tasks.calibrate_team(team.pk)
        response = self.client.get(reverse("teams:calibration", args=[team.slug]))
        self.assertContains(response, "T&#x27;s recall")
        self.assertContains(response, "data-test-points=")
        self.client.force_login(make_user())
        self.assertEqual(self.client.get(reverse("teams:calibration", args=[team.slug])).status_code, 404)


@override_settings(CALIBRATION_REFRESH_AFTER=600)
class CalibrationCacheTests(TestCase):
    """Issue 36: the team page cost 3.8-5 s per GET at 140k reviews. No request computes a report: the page serves
    the cached one, and reviews ask the scoring worker for the next (cards.calibrating)."""

    def setUp(self) -> None:
        cache.clear()
        self.user = make_user(time_zone="UTC")
        self.member = make_user(time_zone="UTC")
        self.team = Team.objects.create(name="T", slug="t-cache1", time_zone="UTC")
        Membership.objects.create(team=self.team, user=self.user, role=Membership.Role.OWNER)
        Membership.objects.create(team=self.team, user=self.member)
        load(self.member, fixture()[:600])
        self.client.force_login(self.user)
        self.url = reverse("teams:calibration", args=[self.team.slug])

    def get(self) -> tuple[str, list[tuple[str, str]]]:
        with published_tasks() as sent, self.captureOnCommitCallbacks() as callbacks:
            html = self.client.get(self.url).content.decode()
        assert callbacks == []
        return html, [(m.task, m.queue) for m in sent]

    def test_it_computes_and_sends_nothing_in_the_request(self) -> None:
        html, sent = self.get()
        assert 'data-calibration="pending"' in html and sent == []

    def test_it_serves_the_report_the_job_cached_in_a_few_queries(self) -> None:
        team_tasks.calibrate_team(self.team.pk)
        # Session, user and profile, membership, the members, the ledger's count: no review is read.
        with self.assertNumQueries(5):
            html, sent = self.get()
        assert 'data-calibration="current"' in html and 'data-reviews="600"' in html and sent == []

    def test_it_shows_the_last_report_until_the_job_the_reviews_wanted_has_run(self) -> None:
        team_tasks.calibrate_team(self.team.pk)
        load(self.user, fixture()[600:700])
        touch(self.user.pk, date(2026, 3, 4))  # what the review flow marks with each review
        html, _ = self.get()
        assert 'data-calibration="stale"' in html and 'data-reviews="600"' in html
        assert "catches up within about 12 minutes" in html
        with published_tasks() as sent:
            team_tasks.refresh_touched_days_task()  # beat's tick, as a worker runs it
        wanted = sorted((m.task, m.args[0], m.queue) for m in sent if m.task.endswith(("_learner", "_team")))
        scoring = settings.SCORING_QUEUE
        assert wanted == [("cards.tasks.calibrate_learner", self.user.pk, scoring),
                          ("teams.tasks.calibrate_team", self.team.pk, scoring)]  # fmt: skip
        team_tasks.calibrate_team(self.team.pk)
        html, _ = self.get()
        assert 'data-calibration="current"' in html and 'data-reviews="700"' in html

    def test_it_sends_one_job_per_window_to_run_once_the_window_closed(self) -> None:
        countdowns: list[int] = []
        assert calibrating.want("team", self.team.pk, countdowns.append)
        assert not calibrating.want("team", self.team.pk, countdowns.append)  # within the window: nothing more
        team_tasks.calibrate_team(self.team.pk)
        cache.delete(calibrating.wanted_key("team", self.team.pk))  # the window closed
        assert calibrating.want("team", self.team.pk, countdowns.append)
        assert countdowns == [0, 600 + calibrating.WANT_MARGIN_SECONDS]  # the first report at once

    def test_it_keys_the_report_by_the_members_and_the_learners_parameters(self) -> None:
        team_tasks.calibrate_team(self.team.pk)
        Membership.objects.filter(team=self.team, user=self.member).delete()
        html, _ = self.get()
        assert 'data-calibration="stale"' in html  # the member's reviews are no longer the team's
        self.client.force_login(self.member)
        tasks.calibrate_learner(self.member.pk)
        assert 'data-calibration="current"' in self.client.get(reverse("cards:calibration")).content.decode()
        self.member.profile.fsrs_parameters_version += 1
        self.member.profile.save(update_fields=["fsrs_parameters_version"])
        assert 'data-calibration="stale"' in self.client.get(reverse("cards:calibration")).content.decode()

    def test_beats_sweep_computes_only_the_reports_missing(self) -> None:
        assert team_tasks.calibrate_teams_due() == 1
        assert team_tasks.calibrate_teams_due() == 0
        assert tasks.calibrate_learners_due() == 1  # the member: the only learner with reviews
        assert tasks.calibrate_learners_due() == 0
