"""Fixtures for the grader tests: a drill in the database, and a real Celery worker on Redis.

The integration fixtures start ``celery -A quizsite worker`` as a subprocess against a
real Redis (``TEST_REDIS_URL``, default database 15; our keys carry a unique prefix, so the
database is never flushed) and the test database. A worker is another process, so
pytest-django's in-memory SQLite database is copied to a file that both processes open for
the module's duration; on PostgreSQL the worker simply connects to the test database by name.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connections

from cards.models import Card, Note
from graders.drills.schema import parse_drill
from graders.management.commands.import_drills import card_fields, card_key, drill_fields
from graders.models import Drill

REPO = Path(__file__).resolve().parents[2]
# Every Celery key in the test Redis starts with this (kombu's global_keyprefix).
REDIS_PREFIX = f"test-graders-{uuid.uuid4().hex[:12]}:"

ADD_ONE = """\
slug = "add-one"
title = "Add one"
prompt_zh = "给张量的每个元素加一。"
prompt_en = "Add one to every element of a tensor."
entry_point = "solution"
starter = "def solution(x):\\n    pass\\n"
reference = "def solution(x):\\n    return x + 1\\n"
device = "{device}"

[source]
note = "pytorch-basics.md"
heading = "Tensors"

[limits]
cpu_seconds = 10.0
wall_seconds = 10.0

[[examples]]
name = "small"
args = ["torch.tensor([1.0, 2.0])"]

[[hidden]]
name = "random"
args = ["torch.randn(3, 4, generator=g)"]
repeat = 3
"""

RIGHT = "def solution(x):\n    return x + 1\n"
WRONG = "def solution(x):\n    return x + 2\n"
CRASH = "def solution(x):\n    return x + undefined_name\n"


def drill_text(device: str = "cpu") -> str:
    return ADD_ONE.replace("{device}", device)


@pytest.fixture
def note(db: None) -> Note:
    return Note.objects.create(
        slug="pytorch-basics", path="notes/pytorch-basics.md", title="PyTorch basics", content="# x", content_hash="0"
    )


@pytest.fixture
def make_drill(note: Note) -> Callable[..., Drill]:
    """Store a drill (and its card) from TOML text, as ``import_drills`` would."""

    def make(text: str | None = None, *, device: str = "cpu") -> Drill:
        text = text or drill_text(device)
        spec = parse_drill(text, "notes/drills/add-one.toml")
        card = Card.objects.create(key=card_key(spec.slug), **card_fields(spec, note, 10_001))
        return Drill.objects.create(slug=spec.slug, card=card, **drill_fields(spec, text, spec.path))

    return make


@pytest.fixture
def drill(make_drill: Callable[..., Drill]) -> Drill:
    return make_drill()


@pytest.fixture
def learner(db: None) -> User:
    return User.objects.create_user("learner", password="x")


# ------------------------------------------------------------------------------ integration


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The test Redis; skips the test when none answers. Other suites share the database, so
    every key this module makes carries ``REDIS_PREFIX`` and only those keys are deleted after."""
    import redis

    url = os.getenv("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    client = redis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"integration tests need Redis at {url} ({exc}); start it with `make services`")
    try:
        yield url
    finally:
        keys = list(client.scan_iter(match=f"{REDIS_PREFIX}*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()


def _database_url(alias: str = "default") -> str:
    conn = connections[alias]
    s = conn.settings_dict
    if conn.vendor == "postgresql":
        auth = quote(s["USER"] or "", safe="") + (":" + quote(s["PASSWORD"], safe="") if s["PASSWORD"] else "")
        return f"postgres://{auth}@{s['HOST'] or 'localhost'}:{s['PORT'] or 5432}/{s['NAME']}"
    if conn.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    pytest.skip(f"no worker database for {conn.vendor}")


@pytest.fixture(scope="module")
def shared_database(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A DATABASE_URL for worker processes, naming the database this process uses.

    In-memory SQLite cannot be shared across processes, so for the module this process
    switches to a file copy of the (migrated, empty) test database, and switches back after;
    the in-memory database is kept alive by holding its connection meanwhile.
    """
    conn = connections["default"]
    if conn.vendor != "sqlite" or not conn.is_in_memory_db():
        yield _database_url()
        return
    path = tmp_path_factory.mktemp("shared-db") / "test.sqlite3"
    with django_db_blocker.unblock():
        conn.ensure_connection()
        in_memory = conn.connection
        target = sqlite3.connect(path)
        in_memory.backup(target)
        target.close()
        original = conn.settings_dict["NAME"]
        conn.connection = None  # not close(): that would drop the in-memory database
        conn.settings_dict["NAME"] = str(path)
        try:
            yield f"sqlite:///{path}"
        finally:
            conn.close()
            conn.settings_dict["NAME"] = original
            conn.connection = in_memory


@pytest.fixture(scope="module")
def celery_on_redis(redis_url: str) -> Iterator[str]:
    """Point this process's Celery app at the test Redis, so on-commit enqueues reach the worker."""
    from quizsite.celery import app

    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    app.conf.broker_url = redis_url
    app.conf.broker_transport_options = {"visibility_timeout": 3, "global_keyprefix": REDIS_PREFIX}
    app.close()  # drop connections made for the old broker
    yield redis_url
    app.conf.broker_url, app.conf.broker_transport_options = saved
    app.close()


class Worker:
    """One ``celery worker`` subprocess (its own process group, so it can be killed whole)."""

    def __init__(self, env: dict[str, str], log: Path, concurrency: int) -> None:
        self.log = log
        self.name = f"test-{uuid.uuid4().hex[:8]}@%h"
        command = [sys.executable, "-m", "celery", "-A", "quizsite", "worker", "-n", self.name, "-l", "INFO"]
        command += ["-Q", "grade_cpu,grade_gpu", "--pool", "prefork", "-c", str(concurrency)]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the worker exited with {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
            if " ready." in self.log.read_text(errors="replace"):
                return
            time.sleep(0.1)
        raise TimeoutError(f"the worker did not start in {timeout}s:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL the whole worker: parent, pool children and sandbox processes."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


class Workers:
    """Starts workers that see the test database and the test Redis; stops them all at the end."""

    def __init__(self, database_url: str, redis_url: str, logs: Path) -> None:
        self.logs = logs
        self.started: list[Worker] = []
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))},
            "DJANGO_SETTINGS_MODULE": "quizsite.settings",
            "SECRET_KEY": settings.SECRET_KEY,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "CELERY_KEY_PREFIX": REDIS_PREFIX,
            "CELERY_VISIBILITY_TIMEOUT": "3",
            "CELERY_RESTORE_INTERVAL": "1",
            "GRADER_SOFT_TIME_LIMIT": "20",
            "GRADER_TIME_LIMIT": "25",
            "GRADER_STALE_AFTER": "30",
            "GRADER_POOL_SIZE": "1",
            "GRADER_DEVICE": "cpu",
        }

    def start(self, concurrency: int = 2) -> Worker:
        worker = Worker(self.env, self.logs / f"worker-{len(self.started)}.log", concurrency)
        self.started.append(worker)
        worker.wait_ready()
        return worker

    @property
    def current(self) -> Worker:
        live = [w for w in self.started if w.process.poll() is None]
        return live[-1] if live else self.start()

    def stop_all(self) -> None:
        for worker in self.started:
            worker.stop()


@pytest.fixture(scope="module")
def workers(shared_database: str, celery_on_redis: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    pool = Workers(shared_database, celery_on_redis, tmp_path_factory.mktemp("celery-logs"))
    try:
        yield pool
    finally:
        pool.stop_all()
