"""The submit request waits for its verdict (issue 37, item 1): the worker announces a final job on a Redis
list once it committed, the request blocks on that list for a bounded time and renders the verdict in its
own response; polling is only the fallback. Through a real Redis, and a real worker for the whole route."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client, override_settings
from django.urls import reverse
from rest_framework.test import APIClient

import tests.conftest
from graders.models import Drill, Submission
from jobs import notify
from jobs.status import Status
from tests.graders.conftest import RIGHT, WRONG, Workers

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def announced(redis_url: str) -> Iterator[None]:
    """This process announces and waits on the test Redis, under the worker's key prefix."""
    prefix = f"{tests.conftest.module_celery_prefix}quizsite:done:"
    with override_settings(REDIS_URL=redis_url, GRADER_NOTIFY_PREFIX=prefix, GRADER_SUBMIT_WAIT_MS=20_000):
        yield


class TestTheWait:
    def test_it_returns_at_once_when_the_job_was_announced_before_the_wait(self, announced: None) -> None:
        notify._announce("submission", 10_001)
        start = time.monotonic()
        assert notify.wait("submission", 10_001, 5)
        assert time.monotonic() - start < 1

    def test_it_returns_when_the_job_is_announced_during_the_wait(self, announced: None) -> None:
        threading.Timer(0.2, notify._announce, ("submission", 10_002)).start()
        start = time.monotonic()
        assert notify.wait("submission", 10_002, 5)
        assert 0.1 < time.monotonic() - start < 2

    def test_it_gives_up_after_its_time_and_says_so(self, announced: None) -> None:
        start = time.monotonic()
        assert not notify.wait("submission", 10_003, 0.3)
        assert 0.25 < time.monotonic() - start < 2

    def test_it_never_waits_without_redis(self) -> None:
        with override_settings(REDIS_URL=""):
            start = time.monotonic()
            assert not notify.wait("submission", 10_004, 5)
            assert time.monotonic() - start < 0.1

    def test_it_never_waits_when_the_process_waiting_threads_are_taken(self, announced: None) -> None:
        with override_settings(GRADER_SUBMIT_WAITERS=1):
            holder = threading.Thread(target=notify.wait, args=("submission", 10_005, 1.5))
            holder.start()
            time.sleep(0.2)
            start = time.monotonic()
            assert not notify.wait("submission", 10_006, 5)  # answered at once: the page polls instead
            assert time.monotonic() - start < 0.1
            holder.join()

    def test_it_announces_only_once_the_transaction_commits(self, announced: None, transactional_db: None) -> None:
        with transaction.atomic():
            notify.announce_on_commit("submission", 10_007)
            assert not notify.wait("submission", 10_007, 0.2)
        assert notify.wait("submission", 10_007, 1)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.xdist_group("celery-redis")
class TestThroughAWorker:
    @pytest.fixture
    def ready(self, workers: Workers, transactional_db: None, announced: None, grader_online: object) -> Workers:
        workers.current  # noqa: B018 - starts one when none is running
        return workers

    def test_it_answers_the_submit_with_the_verdict_itself(self, ready: Workers, learner: User, drill: Drill) -> None:
        client = Client()
        client.force_login(learner)
        url = reverse("graders:submit", args=[drill.slug])
        client.post(url, {"code": RIGHT, "kind": "submit"}, **HTMX)  # the first grade of a drill warms its caches
        response = client.post(url, {"code": WRONG, "kind": "submit"}, **HTMX)
        sub = Submission.objects.latest("queued_at")
        assert sub.status == Status.WRONG_ANSWER
        html = response.content.decode()
        assert "hx-trigger" not in html  # final: the fragment does not poll
        assert sub.get_status_display() in html or "Wrong" in html

    def test_it_answers_an_api_submit_with_wait_with_the_verdict(
        self, ready: Workers, learner: User, drill: Drill
    ) -> None:
        api = APIClient()
        api.force_authenticate(learner)
        response = api.post("/api/v1/submissions/?wait=true", {"drill": drill.slug, "code": RIGHT}, format="json")
        assert response.status_code == 201
        assert response.json()["status"] == Status.ACCEPTED

    def test_it_refuses_a_wait_that_is_not_a_boolean(self, ready: Workers, learner: User, drill: Drill) -> None:
        api = APIClient()
        api.force_authenticate(learner)
        response = api.post("/api/v1/submissions/?wait=soon", {"drill": drill.slug, "code": RIGHT}, format="json")
        assert response.status_code == 400
        assert not Submission.objects.exists()

    def test_it_answers_a_run_with_both_outputs_itself(self, ready: Workers, learner: User, drill: Drill) -> None:
        """ "Run" reuses the submit's bounded wait: the page and the API get the finished run in their response."""
        client = Client()
        client.force_login(learner)
        data = {"code": WRONG, "arguments": "torch.tensor([1.0, 5.0])"}
        html = client.post(reverse("graders:run_input", args=[drill.slug]), data, **HTMX).content.decode()
        assert "hx-trigger" not in html and "tensor([3., 7.])" in html and "tensor([2., 6.])" in html
        api = APIClient()
        api.force_authenticate(learner)
        body = api.post("/api/v1/runs/?wait=true", {**data, "drill": drill.slug}, format="json").json()
        assert (body["status"], body["result"]["same"]) == ("done", False)
        assert not Submission.objects.exists()
