"""Drills and submissions through /api/v1/: no reference or hidden case ever leaves; submissions are
created by graders.services (enqueued on commit) and only their owner can read them."""

from __future__ import annotations

from django.utils import timezone

from graders import services
from graders.models import Drill, Status, Submission
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
        self.assertIs(callbacks[0].func, services.enqueue)  # type: ignore[attr-defined]
        self.assertEqual(callbacks[0].args, (submission.pk, "grade_cpu"))  # type: ignore[attr-defined]

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
        submission = services.create_submission(self.alice, self.drill, RIGHT)
        verdict = {"status": "accepted", "tests": [], "passed": 3, "total": 3}
        Submission.objects.filter(pk=submission.pk).update(
            status=Status.ACCEPTED, verdict=verdict, finished_at=timezone.now()
        )
        body = self.client.get(f"/api/v1/submissions/{submission.uuid}/").json()
        self.assertEqual((body["status"], body["verdict"]["passed"]), ("accepted", 3))
        for private in ("seed", "claim_token", "worker", "attempts", "id"):
            self.assertNotIn(private, body)

    def test_it_answers_404_for_another_learners_submission(self) -> None:
        theirs = services.create_submission(self.bob, self.drill, "def solution(x):\n    return 'bob code'\n")
        response = self.client.get(f"/api/v1/submissions/{theirs.uuid}/")
        self.assert_error(response, 404, "not_found")
        self.assertNotIn("bob code", response.content.decode())
        listing = self.client.get("/api/v1/submissions/").json()
        self.assertEqual(listing["count"], 0)

    def test_it_offers_no_way_to_change_a_submission(self) -> None:
        theirs = services.create_submission(self.bob, self.drill, RIGHT)
        url = f"/api/v1/submissions/{theirs.uuid}/"
        for method in (self.client.put, self.client.patch, self.client.delete):
            with self.subTest(method=method.__name__):
                self.assert_error(method(url, {"code": "stolen"}), 405, "method_not_allowed")
        theirs.refresh_from_db()
        self.assertEqual((theirs.code, theirs.status), (RIGHT, "queued"))

    def test_it_lists_own_submissions_filtered_by_drill(self) -> None:
        mine = services.create_submission(self.alice, self.drill, RIGHT)
        services.create_submission(self.bob, self.drill, RIGHT)
        body = self.client.get("/api/v1/submissions/", {"drill": "add-one"}).json()
        self.assertEqual([s["uuid"] for s in body["results"]], [str(mine.uuid)])
        self.assertEqual(self.client.get("/api/v1/submissions/", {"drill": "other"}).json()["count"], 0)
