"""The receivers: a review queues its learner day's refresh on commit; a verdict records drill XP."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid
from datetime import date
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import transaction

from cards.models import ReviewLog
from teams import tasks
from teams.models import DailyActivity
from tests.cards.stats_factories import make_log
from tests.conftest import celery_broker, published_tasks

from .base import TeamTestCase, at, refresh_message, run_like_a_worker, test_redis_url

REPO = Path(__file__).resolve().parents[2]
DAY = date(2026, 3, 4)


class ReviewReceiverTests(TeamTestCase):
    def log(self) -> ReviewLog:
        return make_log(self.member, self.cards[0], reviewed_at=at(DAY), review_day=DAY, quality=5)

    def test_it_queues_one_refresh_after_commit_without_a_query(self) -> None:
        with self.captureOnCommitCallbacks() as callbacks:
            self.log()
        assert len(callbacks) == 1
        with published_tasks() as sent, self.assertNumQueries(0):
            callbacks[0]()
        assert sent == [refresh_message(self.member, DAY)]
        assert not DailyActivity.objects.exists()  # nothing ran inside the request
        run_like_a_worker(sent)
        assert DailyActivity.objects.get(user=self.member, day=DAY).xp == 1

    def test_it_queues_nothing_for_a_review_that_rolls_back(self) -> None:
        with self.captureOnCommitCallbacks() as callbacks:
            with pytest.raises(RuntimeError), transaction.atomic():
                self.log()
                raise RuntimeError("the rating failed")
        assert callbacks == []

    def test_it_logs_a_broker_failure_and_keeps_the_review(self) -> None:
        with self.captureOnCommitCallbacks() as callbacks:
            self.log()
        with (
            celery_broker("redis://127.0.0.1:1/0"),
            published_tasks() as sent,
            self.assertLogs("teams.tasks", "ERROR") as logs,
        ):
            callbacks[0]()  # returns: the rating request is not failed by the broker
        assert sent == []
        assert "nightly rebuild repairs it" in logs.output[0]
        assert ReviewLog.objects.filter(user=self.member).count() == 1

    def test_a_verdict_batch_the_broker_refuses_is_logged_and_never_raised(self) -> None:
        with (
            celery_broker("redis://127.0.0.1:1/0"),
            published_tasks() as sent,
            self.assertLogs("teams.batching", "ERROR") as logs,
        ):
            tasks.enqueue_verdict(12345)  # in the grading worker, after the verdict committed: must return
        assert sent == []
        assert "could not send a batch of 1 items through _send_verdicts" in logs.output[0]

    def test_it_puts_the_refresh_on_the_celery_queue_in_redis_as_json(self) -> None:
        """The message a worker would read: from the Redis list of queue ``celery``, under our prefix."""
        url = test_redis_url()
        conn = redis.Redis.from_url(url, socket_connect_timeout=1)
        try:
            conn.ping()
        except redis.RedisError as exc:
            pytest.skip(f"Redis at {url} is not answering ({exc})")
        key_prefix = f"test-teams-broker-{uuid.uuid4().hex[:12]}:"
        try:
            with self.captureOnCommitCallbacks() as callbacks:
                self.log()
            with celery_broker(url, global_keyprefix=key_prefix):
                callbacks[0]()
            raw = conn.lrange(f"{key_prefix}celery", 0, -1)
        finally:
            keys = list(conn.scan_iter(match=f"{key_prefix}*"))
            if keys:
                conn.delete(*keys)
            conn.close()
        assert len(raw) == 1
        message = json.loads(raw[0])
        assert message["content-type"] == "application/json"
        assert message["headers"]["task"] == "teams.tasks.refresh_learner_day"
        args, kwargs, _ = json.loads(base64.b64decode(message["body"]))
        assert (args, kwargs) == ([self.member.pk, "2026-03-04"], {})


def test_it_creates_the_filesystem_broker_folders_before_publishing(tmp_path: Path) -> None:
    """A fresh checkout (no ``var/``): the first publish of a fresh process must still land."""
    var = tmp_path / "fresh" / "var"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "REDIS_URL", "DATABASE_URL"))}
    env |= {"DJANGO_SETTINGS_MODULE": "quizsite.settings", "SECRET_KEY": settings.SECRET_KEY}
    env["QUIZSITE_VAR_DIR"] = str(var)
    script = (
        "import django; django.setup()\n"
        "from datetime import date\n"
        "from teams.tasks import enqueue_refresh\n"
        "enqueue_refresh(7, date(2026, 3, 4))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "could not queue" not in done.stderr, done.stderr
    [queued] = list((var / "broker" / "queue").glob("*.celery.msg"))
    message = json.loads(queued.read_text())
    assert message["headers"]["task"] == "teams.tasks.refresh_learner_day"
    assert json.loads(base64.b64decode(message["body"]))[0] == [7, "2026-03-04"]
