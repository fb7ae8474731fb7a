"""Drills and submissions through /api/v1/: no reference or hidden case ever leaves; submissions are
made by graders.attempts.submissions.submit, the drill page's own use case (enqueued on commit), and only their
owner can read them."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django.test.utils import override_settings
from django.urls import reverse
from django.utils import timezone

from cards.models import CardState, ReviewLog
from graders.attempts import submissions
from graders.drills.local import LocalRunner
from graders.kinds.runs import RUNS
from graders.kinds.verdicts import SUBMISSIONS
from graders.models import Drill, DrillDifficulty, DrillRun, LearnerSkill, Submission
from jobs import lifecycle as jobs
from jobs import tasks
from jobs.status import Status
from tests.api.base import REFERENCE, ApiTestCase, make_drill

RIGHT = "def solution(x):\n    return x + 1\n"


class DrillTests(ApiTestCase):
    drill: Drill

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.drill = make_drill(cls.note)

    def test_it_lists_drills_without_reference_or_hidden_cases(self) -> None:
        response = self.client.get("/api/v1/drills/")
        self.assertEqual(response.status_code, 200)
        text = response.content.decode()
        for secret in (REFERENCE.strip(), "the reference, never served", "secret-random", "randn", "definition"):
            self.assertNotIn(secret, text)
        drill = response.json()["results"][0]
        self.assertEqual(drill["slug"], "add-one")
        self.assertEqual(drill["card"], str(self.drill.card.uuid))
        self.assertEqual(drill["deck"], "pytorch-basics")
        self.assertEqual(drill["examples"], [{"name": "small-example", "args": ["torch.tensor([1.0, 2.0])"]}])
        self.assertNotIn("reference_code", drill)

    def test_it_shows_one_drill_and_hides_inactive_ones(self) -> None:
        self.assertEqual(self.client.get("/api/v1/drills/add-one/").json()["entry_point"], "solution")
        Drill.objects.filter(pk=self.drill.pk).update(active=False)
        self.assert_error(self.client.get("/api/v1/drills/add-one/"), 404, "not_found")


class FittedDifficultyTests(ApiTestCase):
    drill: Drill

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.drill = make_drill(cls.note)

    def fit(self, *, band: str = "hard") -> None:
        DrillDifficulty.objects.create(
            drill=self.drill,
            difficulty=1.2,
            standard_error=0.3,
            attempts=60,
            passed=20,
            quantile=0.9 if band else None,
            band=band,
            disagreement=1 if band else 0,
            fitted_at=timezone.now(),
        )

    def test_it_serves_the_fitted_difficulty_beside_the_authored_label(self) -> None:
        self.fit()
        drill = self.client.get("/api/v1/drills/add-one/").json()
        self.assertEqual(drill["difficulty"], "medium")
        fitted = drill["fitted_difficulty"]
        self.assertEqual(
            (fitted["band"], fitted["attempts"], fitted["passed"], fitted["disagreement"]), ("hard", 60, 20, 1)
        )
        self.assertAlmostEqual(fitted["difficulty"], 1.2)
        self.assertIsNone(drill["your_first_try_chance"])  # alice has no fitted skill

    def test_it_serves_no_fit_below_the_minimum_of_attempts(self) -> None:
        self.fit(band="")
        drill = self.client.get("/api/v1/drills/").json()["results"][0]
        self.assertIsNone(drill["fitted_difficulty"])

    def test_a_learner_reads_their_own_chance_and_skill_and_never_anothers(self) -> None:
        self.fit()
        LearnerSkill.objects.create(user=self.alice, skill=1.2 + 0.8473, attempts=8, passed=5, fitted_at=timezone.now())
        LearnerSkill.objects.create(user=self.bob, skill=-3.0, attempts=8, passed=0, fitted_at=timezone.now())
        mine = self.client.get("/api/v1/drills/").json()["results"][0]
        self.assertAlmostEqual(mine["your_first_try_chance"], 0.7, places=3)
        theirs = self.as_user(self.bob).get("/api/v1/drills/add-one/").json()
        self.assertLess(theirs["your_first_try_chance"], 0.02)
        skill = self.client.get("/api/v1/stats/").json()["drill_skill"]
        self.assertEqual((skill["attempts"], skill["passed"]), (8, 5))
        self.assertAlmostEqual(skill["skill"], 2.0473)
        LearnerSkill.objects.filter(user=self.bob).update(attempts=LearnerSkill.MIN_ATTEMPTS - 1)
        self.assertIsNone(self.as_user(self.bob).get("/api/v1/stats/").json()["drill_skill"])


def submit(user: object, drill: Drill, code: str) -> Submission:
    sub = submissions.submit(user, drill, code)
    assert isinstance(sub, Submission), sub
    return sub


class SubmissionTests(ApiTestCase):
    drill: Drill

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.drill = make_drill(cls.note)

    def test_it_creates_a_queued_submission_and_enqueues_it_on_commit(self) -> None:
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            response = self.client.post("/api/v1/submissions/", {"drill": "add-one", "code": RIGHT})
        self.assertEqual(response.status_code, 201, response.content)
        body = response.json()
        self.assertEqual((body["status"], body["kind"], body["drill"]), ("queued", "submit", "add-one"))
        submission = Submission.objects.get(uuid=body["uuid"])
        self.assertEqual((submission.user_id, submission.code), (self.alice.pk, RIGHT))
        self.assertEqual(len(callbacks), 1)
        self.assertIs(callbacks[0].func, tasks.enqueue)
        self.assertEqual(callbacks[0].args, (submission,))

    def test_it_rejects_bad_submissions_without_writing(self) -> None:
        for body in (
            {"drill": "add-one", "code": ""},
            {"drill": "add-one", "code": "def solution(x):\x00"},
            {"drill": "add-one", "code": "x" * 50_001},
            {"drill": "add-one", "code": RIGHT, "kind": "hack"},
            {"code": RIGHT},
        ):
            with self.subTest(body=body):
                with self.captureOnCommitCallbacks() as callbacks:
                    error = self.assert_error(self.client.post("/api/v1/submissions/", body), 400, "invalid")
                self.assertTrue(error["details"])
                self.assertEqual(callbacks, [])
        self.assertFalse(Submission.objects.exists())

    def test_it_answers_404_for_an_unknown_or_retired_drill_without_writing(self) -> None:
        Drill.objects.filter(pk=self.drill.pk).update(active=False)
        for slug in ("no-such-drill", "add-one"):
            with self.subTest(slug=slug), self.captureOnCommitCallbacks() as callbacks:
                response = self.client.post("/api/v1/submissions/", {"drill": slug, "code": RIGHT})
                self.assert_error(response, 404, "not_found")
            self.assertEqual(callbacks, [])
        self.assertFalse(Submission.objects.exists())

    def test_it_shows_a_graded_submission_to_its_owner(self) -> None:
        submission = submit(self.alice, self.drill, RIGHT)
        verdict = {"status": "accepted", "tests": [], "passed": 3, "total": 3}
        claim = jobs.claim(SUBMISSIONS, submission.pk, timezone.now())
        jobs.finish(SUBMISSIONS, claim.job, claim.token, jobs.Finished(Status.ACCEPTED, {"verdict": verdict}))
        body = self.client.get(f"/api/v1/submissions/{submission.uuid}/").json()
        self.assertEqual((body["status"], body["verdict"]["passed"]), ("accepted", 3))
        for private in ("seed", "claim_token", "worker", "attempts", "id"):
            self.assertNotIn(private, body)

    def test_it_answers_404_for_another_learners_submission(self) -> None:
        theirs = submit(self.bob, self.drill, "def solution(x):\n    return 'bob code'\n")
        response = self.client.get(f"/api/v1/submissions/{theirs.uuid}/")
        self.assert_error(response, 404, "not_found")
        self.assertNotIn("bob code", response.content.decode())
        listing = self.client.get("/api/v1/submissions/").json()
        self.assertEqual(listing["count"], 0)

    def test_it_offers_no_way_to_change_a_submission(self) -> None:
        theirs = submit(self.bob, self.drill, RIGHT)
        url = f"/api/v1/submissions/{theirs.uuid}/"
        for method in (self.client.put, self.client.patch, self.client.delete):
            with self.subTest(method=method.__name__):
                self.assert_error(method(url, {"code": "stolen"}), 405, "method_not_allowed")
        theirs.refresh_from_db()
        self.assertEqual((theirs.code, theirs.status), (RIGHT, "queued"))

    def test_it_lists_own_submissions_filtered_by_drill(self) -> None:
        mine = submit(self.alice, self.drill, RIGHT)
        submit(self.bob, self.drill, RIGHT)
        body = self.client.get("/api/v1/submissions/", {"drill": "add-one"}).json()
        self.assertEqual([s["uuid"] for s in body["results"]], [str(mine.uuid)])
        self.assertEqual(self.client.get("/api/v1/submissions/", {"drill": "other"}).json()["count"], 0)

    @override_settings(GRADER_RATE_LIMIT=2, GRADER_RATE_WINDOW=60)
    def test_it_applies_the_drill_pages_rate_limit_without_writing_the_extra_one(self) -> None:
        for _ in range(2):
            self.assertEqual(
                self.client.post("/api/v1/submissions/", {"drill": "add-one", "code": RIGHT}).status_code, 201
            )
        response = self.client.post("/api/v1/submissions/", {"drill": "add-one", "code": RIGHT})
        self.assert_error(response, 429, "throttled")
        self.assertGreaterEqual(int(response["Retry-After"]), 1)
        self.assertEqual(Submission.objects.count(), 2)

    def test_it_refuses_code_over_the_drills_size_cap_like_the_page(self) -> None:
        error = self.assert_error(
            self.client.post("/api/v1/submissions/", {"drill": "add-one", "code": "#" * 20_001}), 400, "invalid"
        )
        self.assertIn("the limit for this drill is 20,000 bytes", error["details"]["code"][0])
        self.assertFalse(Submission.objects.exists())

    def test_it_rates_a_drill_solved_through_the_api_exactly_as_the_page_does(self) -> None:
        """alice solves the drill through the API, bob on the drill page: the same card state and log."""
        page = Client()
        page.force_login(self.bob)
        page.post(reverse("graders:submit", args=[self.drill.slug]), {"code": RIGHT, "kind": "submit"})
        self.client.post("/api/v1/submissions/", {"drill": "add-one", "code": RIGHT})
        self.assertEqual(Submission.objects.count(), 2)
        for sub in Submission.objects.all():
            self.assertEqual(jobs.process(SUBMISSIONS, sub.pk, LocalRunner(), worker="test").status, "accepted")
        fields = ("repetitions", "interval", "easiness", "lapses")
        states = {
            s.user_id: tuple(getattr(s, f) for f in fields) for s in CardState.objects.filter(card=self.drill.card)
        }
        logs = {log.user_id: (log.quality, log.source) for log in ReviewLog.objects.filter(card=self.drill.card)}
        self.assertEqual(states[self.alice.pk], states[self.bob.pk])
        self.assertEqual(logs, {self.alice.pk: (5, "grader"), self.bob.pk: (5, "grader")})


class RunTests(ApiTestCase):
    """`POST /api/v1/runs/`: the drill page's Run, its arguments checked before anything is stored."""

    drill: Drill

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.drill = make_drill(cls.note)

    def post(self, arguments: str, code: str = RIGHT) -> Any:
        return self.client.post("/api/v1/runs/", {"drill": "add-one", "code": code, "arguments": arguments})

    def test_it_queues_a_run_and_its_owner_reads_both_outputs(self) -> None:
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            response = self.post("torch.tensor([1.0, 5.0])")
        self.assertEqual(response.status_code, 201, response.content)
        body = response.json()
        self.assertEqual((body["status"], body["drill"]), ("queued", "add-one"))
        self.assertEqual(body["arguments"], ["torch.tensor([1.0, 5.0])"])
        self.assertEqual(len(callbacks), 1)
        run = DrillRun.objects.get(uuid=body["uuid"])
        self.assertEqual(jobs.process(RUNS, run.pk, LocalRunner(), worker="test").status, Status.DONE)
        result = self.client.get(f"/api/v1/runs/{run.uuid}/").json()["result"]
        output = "tensor([2., 6.])\n# shape (2,), float32"
        self.assertEqual((result["same"], result["expected"], result["actual"]), (True, output, output))
        self.assert_error(self.as_user(self.bob).get(f"/api/v1/runs/{run.uuid}/"), 404, "not_found")
        self.assertFalse(Submission.objects.exists())

    def test_it_refuses_arguments_outside_the_case_language_and_stores_nothing(self) -> None:
        error = self.assert_error(self.post("torch.tensor.__subclasses__()"), 400, "invalid")
        self.assertIn("uses the private attribute '__subclasses__'", error["details"]["arguments"][0])
        error = self.assert_error(self.post("__import__('os')"), 400, "invalid")
        self.assertIn("uses the unknown name '__import__'", error["details"]["arguments"][0])
        self.assertFalse(DrillRun.objects.exists())

    def test_an_unknown_drill_is_404_whatever_its_arguments(self) -> None:
        """The drill first: arguments mean nothing without it (schemathesis found a 400 here, ST202)."""
        body = {"drill": "no-such-drill", "code": RIGHT, "arguments": "\x7f not python ("}
        self.assert_error(self.client.post("/api/v1/runs/", body), 404, "not_found")
        self.assertFalse(DrillRun.objects.exists())

    @override_settings(GRADER_RUN_RATE_LIMIT=1, GRADER_RUN_RATE_WINDOW=60)
    def test_it_applies_the_run_rate_limit(self) -> None:
        self.assertEqual(self.post("torch.ones(2)").status_code, 201)
        response = self.post("torch.ones(2)")
        self.assert_error(response, 429, "throttled")
        self.assertGreaterEqual(int(response["Retry-After"]), 1)
        self.assertEqual(DrillRun.objects.count(), 1)
