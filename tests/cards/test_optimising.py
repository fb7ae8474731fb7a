"""When a learner's FSRS fit is due, asking for one, and what the settings page says (no torch here:
the fit itself is tested in tests/test_fsrs_fit.py)."""

from __future__ import annotations

import math
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta

from django.test import TestCase, override_settings
from django.urls import reverse
from django.utils import timezone
from fsrs.scheduler import DEFAULT_PARAMETERS

from cards import optimising, tasks, views
from cards.models import Optimisation, Profile, ReviewLog
from cards.scheduling import evaluate, fitting
from jobs.tasks import reap
from quizsite import claims
from tests.cards.factories import make_card, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


def log_reviews(user: object, cards: int, reviews_each: int, start: date = date(2026, 1, 1)) -> None:
    """Each card reviewed Good every other day: ``cards * (reviews_each - 1)`` scored reviews."""
    rows = []
    for card in [make_card() for _ in range(cards)]:
        for k in range(reviews_each):
            day = start + timedelta(days=2 * k)
            rows.append(
                ReviewLog(
                    user=user, card=card, quality=4, reviewed_at=datetime.combine(day, datetime.min.time(), UTC),
                    review_day=day, easiness_before=2.5, interval_before=0, repetitions_before=0,
                    easiness_after=2.5, interval_after=1, repetitions_after=1, due_after=day, was_new=k == 0,
                )
            )  # fmt: skip
    ReviewLog.objects.bulk_create(rows)


class DueTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC", scheduler="fsrs")

    def test_it_waits_for_the_keep_rules_minimum(self) -> None:
        log_reviews(self.user, cards=10, reviews_each=6)  # 50 scored
        self.assertEqual(optimising.scored_count(self.user.pk), 50)
        self.assertFalse(optimising.is_due(self.user.pk, NOW))
        log_reviews(self.user, cards=247, reviews_each=21)  # 4,990 scored: under 5,000
        self.assertLess(optimising.scored_count(self.user.pk), fitting.MIN_REVIEWS)
        self.assertFalse(optimising.is_due(self.user.pk, NOW))
        log_reviews(self.user, cards=1, reviews_each=21)  # 5,010
        self.assertTrue(optimising.is_due(self.user.pk, NOW))

    def test_it_runs_again_when_the_reviews_grew_by_a_quarter_or_a_month_passed(self) -> None:
        log_reviews(self.user, cards=260, reviews_each=21)  # 5,200
        Optimisation.objects.create(user=self.user, created_at=NOW, status="done", reviews=5200)
        self.assertFalse(optimising.is_due(self.user.pk, NOW + timedelta(days=29)))
        self.assertTrue(optimising.is_due(self.user.pk, NOW + timedelta(days=30)))
        log_reviews(self.user, cards=64, reviews_each=21)  # 6,480: not yet a quarter more
        self.assertFalse(optimising.is_due(self.user.pk, NOW + timedelta(days=1)))
        log_reviews(self.user, cards=1, reviews_each=21)  # 6,500: a quarter more than 5,200
        self.assertTrue(optimising.is_due(self.user.pk, NOW + timedelta(days=1)))

    def test_it_keeps_one_fit_active_per_learner_and_enqueues_after_commit(self) -> None:
        with self.captureOnCommitCallbacks() as callbacks:
            first = tasks.request_optimisation(self.user, NOW)
            second = tasks.request_optimisation(self.user, NOW)
        self.assertIsNotNone(first)
        self.assertIsNone(second)
        self.assertEqual(len(callbacks), 1)
        self.assertFalse(optimising.is_due(self.user.pk, NOW + timedelta(days=60)))

    def test_it_reads_the_log_as_the_scoring_does(self) -> None:
        log_reviews(self.user, cards=2, reviews_each=3)
        reviews = optimising.learner_reviews(self.user.pk)
        self.assertEqual({r.rating for r in reviews}, {3})
        self.assertEqual(evaluate.evaluate(reviews)["n"], 4)

    def test_it_counts_scored_reviews_as_the_fit_does(self) -> None:
        log_reviews(self.user, cards=3, reviews_each=4)
        log_reviews(self.user, cards=2, reviews_each=3, start=date(2026, 1, 2))
        first = ReviewLog.objects.filter(user=self.user).order_by("pk").first()
        assert first is not None
        first.pk, first.reviewed_at = None, first.reviewed_at + timedelta(minutes=5)  # a second review that day
        first.save()
        expected = len(fitting.scored_days(optimising.learner_reviews(self.user.pk)))
        self.assertEqual(optimising.scored_count(self.user.pk), expected)
        self.assertEqual(expected, 3 * 3 + 2 * 2)

    def test_it_says_default_parameters_below_the_minimum(self) -> None:
        outcome = fitting.optimise(optimising.learner_reviews(self.user.pk), None)
        self.assertFalse(outcome.keep)
        self.assertEqual(
            outcome.message,
            "Default parameters until 5000 reviews (0 so far): "
            "the fit learns from the earlier 20% of them and needs 1000.",
        )


@override_settings(FSRS_FIT_COOLDOWN=3600, FSRS_FIT_STALE_AFTER=1800)
class CooldownAndStaleTests(TestCase):
    """A learner's "fit now" waits out a cooldown; a fit whose worker died gives way to the next."""

    def setUp(self) -> None:
        self.user = make_user(time_zone="Asia/Shanghai", scheduler="fsrs")

    def test_it_refuses_a_second_fit_within_the_cooldown_and_says_from_when(self) -> None:
        first = optimising.request(self.user, NOW)
        assert isinstance(first, Optimisation)
        Optimisation.objects.filter(pk=first.pk).update(status="done", finished_at=NOW + timedelta(minutes=2))
        again = optimising.request(self.user, NOW + timedelta(minutes=59))
        assert isinstance(again, optimising.Refusal) and again.next_at == NOW + timedelta(hours=1)
        # 11:00 UTC is 19:00 in Shanghai: the learner reads their own clock.
        self.assertIn("The next may run from 2026-03-10 19:00 (Asia/Shanghai)", again.message(self.user.profile.zone))
        self.assertEqual(Optimisation.objects.filter(user=self.user).count(), 1)
        assert isinstance(optimising.request(self.user, NOW + timedelta(hours=1)), Optimisation)

    def test_it_counts_the_cooldown_from_a_failed_fit_too(self) -> None:
        Optimisation.objects.create(user=self.user, created_at=NOW, status="failed")
        assert isinstance(optimising.request(self.user, NOW + timedelta(minutes=5)), optimising.Refusal)

    def test_it_says_a_fit_is_active_rather_than_cooling_down(self) -> None:
        optimising.request(self.user, NOW)
        refusal = optimising.request(self.user, NOW + timedelta(minutes=10))
        assert isinstance(refusal, optimising.Refusal) and refusal.active and refusal.next_at is None

    def test_it_gives_up_a_fit_whose_worker_died_and_runs_the_next(self) -> None:
        """Issue 40: a worker killed mid-fit left the row running, and the one-active constraint then refused
        every later fit of that learner. Given up after FSRS_FIT_STALE_AFTER; the cooldown still counts from
        when the dead fit was asked for."""
        dead = Optimisation.objects.create(user=self.user, created_at=NOW, status="running", started_at=NOW)
        busy = optimising.request(self.user, NOW + timedelta(minutes=29))
        assert isinstance(busy, optimising.Refusal) and busy.active
        given_up = NOW + timedelta(minutes=31)
        cooling = optimising.request(self.user, given_up)
        assert isinstance(cooling, optimising.Refusal) and cooling.next_at == NOW + timedelta(hours=1)
        dead.refresh_from_db()
        self.assertEqual((dead.status, dead.finished_at, dead.message), ("failed", given_up, optimising.STALE_MESSAGE))
        fresh = optimising.request(self.user, NOW + timedelta(hours=1))
        assert isinstance(fresh, Optimisation) and fresh.status == "queued"

    def test_it_gives_up_a_fit_whose_message_was_lost(self) -> None:
        lost = Optimisation.objects.create(user=self.user, created_at=NOW)
        self.assertEqual(optimising.expire_stale(NOW + timedelta(minutes=29)), 0)
        self.assertEqual(optimising.expire_stale(NOW + timedelta(minutes=31)), 1)
        lost.refresh_from_db()
        self.assertEqual(lost.status, "failed")

    def test_beats_daily_job_frees_a_stale_fit_for_learners_who_never_press_the_button(self) -> None:
        log_reviews(self.user, cards=260, reviews_each=21)  # 5,200 scored: due
        Optimisation.objects.create(user=self.user, created_at=NOW - timedelta(days=3), status="running",
                                    started_at=NOW - timedelta(days=3))  # fmt: skip
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            self.assertEqual(tasks.optimise_due(), 1)
        self.assertEqual(len(callbacks), 1)
        self.assertEqual(Optimisation.objects.get(user=self.user, status="queued").user_id, self.user.pk)

    def test_beats_daily_job_refits_once_the_reviews_grew_by_a_quarter(self) -> None:
        cards = math.ceil(fitting.MIN_REVIEWS / 5)
        log_reviews(self.user, cards=cards, reviews_each=6)  # 5 scored reviews a card
        last = timezone.now() - timedelta(days=1)
        Optimisation.objects.create(user=self.user, created_at=last, finished_at=last, status="done",
                                    reviews=5 * cards)  # fmt: skip
        grown = math.ceil(optimising.REFIT_GROWTH * 5 * cards)  # the scored reviews that make a refit due
        log_reviews(self.user, cards=(grown - 5 * cards) // 5 - (grown % 5 == 0), reviews_each=6)
        self.assertLess(optimising.scored_count(self.user.pk), grown)
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            self.assertEqual(tasks.optimise_due(), 0)  # not yet a quarter more, and the last fit is a day old
        log_reviews(self.user, cards=1, reviews_each=6)
        self.assertGreaterEqual(optimising.scored_count(self.user.pk), grown)
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            self.assertEqual(tasks.optimise_due(), 1)
        self.assertEqual(len(callbacks), 1)
        self.assertTrue(Optimisation.objects.filter(user=self.user, status="queued").exists())

    def test_it_drops_the_outcome_of_a_fit_given_up_while_it_ran(self) -> None:
        """A fit that outlived its bound and finished after all must not overwrite the row or the profile."""
        row = Optimisation.objects.create(user=self.user, created_at=NOW)
        token = claims.new_claim_token()
        self.addCleanup(claims.release_claim, token)
        with override_settings(FSRS_FIT_STALE_AFTER=0):
            # A run that claimed the row at NOW finds it given up meanwhile.
            claimed = Optimisation.objects.filter(pk=row.pk).update(status="running", started_at=NOW, claim_token=token)
            assert claimed == 1 and optimising.expire_stale(NOW + timedelta(seconds=1)) == 1
        row.refresh_from_db()
        row.status, row.message = Optimisation.Status.DONE, "late"
        assert not optimising._finish(row, token, self.user.profile, None)
        row.refresh_from_db()
        self.assertEqual((row.status, row.message), ("failed", optimising.STALE_MESSAGE))


def dead_claim() -> str:
    """The claim token of a process on this host that has exited: a worker killed mid-fit."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    host = claims._process_identity(0).split(":")[0]
    return f"{host}:{process.pid}:12345:abcd"


@override_settings(FSRS_FIT_COOLDOWN=60, FSRS_FIT_STALE_AFTER=1800)
class LostFitTests(TestCase):
    """Issue 40: a fit whose worker was killed is lost like a grading job whose grader died, and judged the
    same way (``quizsite.claims``): given up at once when its claimant is provably dead, by the reaper."""

    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC", scheduler="fsrs")
        self.now = timezone.now()

    def killed_mid_fit(self) -> Optimisation:
        """Asked for five minutes ago, claimed two minutes ago by a worker since SIGKILLed: far within
        FSRS_FIT_STALE_AFTER, so only the dead claimant tells that it will never finish."""
        asked, claimed = self.now - timedelta(minutes=5), self.now - timedelta(minutes=2)
        return Optimisation.objects.create(
            user=self.user, created_at=asked, status="running", started_at=claimed, claim_token=dead_claim()
        )

    def test_the_reaper_gives_up_a_fit_whose_worker_was_killed_and_the_next_fit_runs(self) -> None:
        dead = self.killed_mid_fit()
        self.assertEqual(reap(), 0)  # no grading job was re-sent; the fit is given up, not re-sent
        dead.refresh_from_db()
        self.assertEqual((dead.status, dead.message), ("failed", optimising.STALE_MESSAGE))
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            fresh = tasks.request_fit_now(self.user, self.now)
        assert isinstance(fresh, Optimisation), fresh
        self.assertEqual(len(callbacks), 1)
        done = optimising.run(fresh.pk, self.now)
        assert done is not None
        self.assertEqual((done.status, done.claim_token != dead.claim_token), ("done", True))

    def test_a_scoring_worker_gives_up_what_a_killed_one_held_when_it_starts(self) -> None:
        dead = self.killed_mid_fit()
        self.assertEqual(tasks.expire_lost_fits(), 1)
        dead.refresh_from_db()
        self.assertEqual(dead.status, "failed")

    def test_the_reaper_leaves_a_fit_that_waits_its_turn_in_the_queue(self) -> None:
        """Beat's daily job queues many fits at once, and the scoring worker runs one at a time: a fit queued
        longer than FSRS_FIT_STALE_AFTER is given up only where a new fit may be asked for."""
        waiting = Optimisation.objects.create(user=self.user, created_at=self.now - timedelta(minutes=31))
        reap()
        self.assertEqual(tasks.expire_lost_fits(), 0)
        waiting.refresh_from_db()
        self.assertEqual(waiting.status, "queued")

    def test_it_leaves_a_fit_whose_worker_is_alive_running(self) -> None:
        token = claims.new_claim_token()
        self.addCleanup(claims.release_claim, token)
        Optimisation.objects.create(
            user=self.user, created_at=self.now, status="running", started_at=self.now, claim_token=token
        )
        self.assertEqual(optimising.expire_stale(self.now + timedelta(minutes=29)), 0)
        refusal = optimising.request(self.user, self.now + timedelta(minutes=29))
        assert isinstance(refusal, optimising.Refusal) and refusal.active


class SettingsOptimisationTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC")
        self.client.force_login(self.user)

    def test_it_shows_never_fitted_and_queues_a_fit_on_request(self) -> None:
        self.assertContains(self.client.get(reverse("cards:settings")), 'data-optimisation="none"')
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            response = self.client.post(reverse("cards:optimise"))
        self.assertRedirects(response, reverse("cards:settings"))
        self.assertEqual(len(callbacks), 1)
        self.assertEqual(Optimisation.objects.get(user=self.user).status, "queued")
        self.assertContains(self.client.get(reverse("cards:settings")), 'data-optimisation="queued"')

    def test_it_shows_what_the_last_fit_changed(self) -> None:
        Optimisation.objects.create(
            user=self.user, created_at=NOW, finished_at=NOW, status="done", kept=True,
            message="Held-out log loss 0.6688 -> 0.6550 on 337 reviews; new parameters kept.",
        )  # fmt: skip
        response = self.client.get(reverse("cards:settings"))
        self.assertContains(response, "0.6688 -&gt; 0.6550 on 337 reviews; new parameters kept.")
        self.assertNotContains(response, "data-parameters")  # a fit with no parameters has no table

    def test_it_shows_each_parameters_change(self) -> None:
        fitted = list(DEFAULT_PARAMETERS)
        fitted[0] += 0.5
        Optimisation.objects.create(
            user=self.user, created_at=NOW, finished_at=NOW, status="done", kept=False, parameters=fitted,
            message="Held-out log loss 0.3209 -> 0.3214 on 1355 reviews of 775 cards; new parameters not kept: "
            "the gain is within 2 standard errors (0.0021).",
        )  # fmt: skip
        response = self.client.get(reverse("cards:settings"))
        self.assertContains(response, 'data-parameter="w20"')
        row = response.content.decode().split('data-parameter="w0"')[1].split("</tr>")[0]
        self.assertIn(f"{fitted[0]:.4f}", row)
        self.assertIn("+0.5000", row)
        self.assertEqual(views.parameter_rows(None, fitted)[1]["change"], 0)

    def test_a_refit_shows_each_parameter_before_and_after_it(self) -> None:
        earlier, refit = list(DEFAULT_PARAMETERS), list(DEFAULT_PARAMETERS)
        earlier[0], refit[0] = 0.3, 0.45  # an earlier fit was in use; the refit moved w0 from 0.3 to 0.45
        Profile.objects.filter(user=self.user).update(fsrs_parameters=refit, fsrs_parameters_version=2)
        Optimisation.objects.create(
            user=self.user, created_at=NOW, finished_at=NOW, status="done", kept=True, parameters=refit,
            parameters_before=earlier,
            message="Held-out log loss 0.3300 -> 0.3200 on 1355 reviews of 775 cards; new parameters kept.",
        )  # fmt: skip
        response = self.client.get(reverse("cards:settings"))
        row = response.content.decode().split('data-parameter="w0"')[1].split("</tr>")[0]
        self.assertIn("data-before>0.3000<", row)
        self.assertIn("data-after>0.4500<", row)
        self.assertIn("data-change>+0.1500<", row)  # from what it replaced, not from the default
        self.assertContains(response, "Before the last fit")

    def test_it_says_how_many_reviews_count_and_how_many_a_fit_needs(self) -> None:
        log_reviews(self.user, cards=5, reviews_each=3)  # 15 reviews, 10 of them on a later day than the card's last
        response = self.client.get(reverse("cards:settings"))
        self.assertContains(response, f"10 reviews count towards a fit, which needs {fitting.MIN_REVIEWS}")
        self.assertContains(response, "only a card's reviews on a later day than its previous one count")

    def test_the_button_says_up_front_that_too_few_reviews_keep_the_defaults(self) -> None:
        log_reviews(self.user, cards=2, reviews_each=3)
        with self.captureOnCommitCallbacks(execute=False):
            response = self.client.post(reverse("cards:optimise"), follow=True)
        self.assertContains(response, f"Only 4 of your reviews count towards a fit, which needs {fitting.MIN_REVIEWS}")

    def test_it_says_a_fit_with_too_few_reviews_did_not_run_rather_than_done(self) -> None:
        Optimisation.objects.create(
            user=self.user, created_at=NOW, finished_at=NOW, status="done", kept=False, parameters=None,
            message=f"Default parameters until {fitting.MIN_REVIEWS} reviews (70 so far): the fit learns from the "
            "earlier 80% of them and needs 512.",
        )  # fmt: skip
        response = self.client.get(reverse("cards:settings"))
        self.assertNotContains(response, "Last fit: done")
        self.assertContains(response, "Last fit: could not run, too few reviews (your parameters stay as they were)")

    def test_it_says_whether_a_finished_fit_was_kept_or_failed(self) -> None:
        row = Optimisation.objects.create(
            user=self.user, created_at=NOW, finished_at=NOW, status="done", kept=False, parameters=[0.1] * 21
        )
        self.assertContains(self.client.get(reverse("cards:settings")), "Last fit: done, new parameters not kept")
        Optimisation.objects.filter(pk=row.pk).update(kept=True)
        self.assertContains(self.client.get(reverse("cards:settings")), "Last fit: done, new parameters kept,")
        Optimisation.objects.filter(pk=row.pk).update(status="failed", message=optimising.FAILED_MESSAGE)
        self.assertContains(self.client.get(reverse("cards:settings")), "Last fit: failed (your parameters stay")

    def test_it_tells_a_learner_pressing_again_when_the_next_fit_may_run(self) -> None:
        with override_settings(FSRS_FIT_COOLDOWN=3600), self.captureOnCommitCallbacks(execute=False) as callbacks:
            self.client.post(reverse("cards:optimise"))
            Optimisation.objects.filter(user=self.user).update(status="done")
            response = self.client.post(reverse("cards:optimise"), follow=True)
        self.assertEqual(len(callbacks), 1)
        self.assertEqual(Optimisation.objects.filter(user=self.user).count(), 1)
        self.assertContains(response, "one fit every 60 minutes. The next may run from")
