"""Fixtures every suite may need: a private broker folder, and real Celery workers on a real Redis.

* Every test session publishes into its own temporary filesystem broker, never into the checkout's
  ``var/broker`` (a developer's worker would otherwise run the tests' messages against their
  database). The folders are left for ``quizsite.celery.ensure_broker_folders`` to create.
* The integration fixtures start ``celery -A quizsite worker`` subprocesses against a real Redis
  (``TEST_REDIS_URL``, default database 15; every key carries a unique prefix, so the database is
  never flushed) and the test database. A worker is another process, so pytest-django's in-memory
  SQLite database is copied to a file that both processes open for the module's duration; on
  PostgreSQL the worker connects to the test database by name.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from celery.signals import after_task_publish
from django.conf import settings
from django.db import connections
from kombu.utils.json import dumps, loads

REPO = Path(__file__).resolve().parents[1]
# The suite makes and logs in thousands of users. Production's hasher (PBKDF2, a million rounds) is slow on
# purpose; what a test proves does not depend on it (Django's testing docs, "Speeding up the tests").
# Production keeps Django's default (quizsite/settings.py names none), and make run's stack (bench.runstack,
# the soak) runs with the real settings.
settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Every Celery key these fixtures make in the test Redis starts with this (kombu's global_keyprefix).
CELERY_PREFIX = f"test-celery-{uuid.uuid4().hex[:12]}:"


def publish_to_configured_broker() -> None:
    """Make the next publish go to the broker configured now.

    Celery builds its connection and producer pools once, for the broker configured at that
    moment, and ``app.close()`` keeps the producer pool (and unregisters the app, so a
    ``shared_task`` imported later would be missing from it): a fixture that points the app at
    another broker after anything was published would otherwise go on publishing to the first
    one. The pools stay in kombu's registry, keyed by broker and transport options, so switching
    back reuses them.
    """
    from quizsite.celery import app

    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture(autouse=True)
def _fresh_producer_pool() -> None:
    """Each test publishes to the broker its fixtures configured (see ``publish_to_configured_broker``)."""
    publish_to_configured_broker()


@pytest.fixture(autouse=True)
def _no_drills_kept_between_tests() -> None:
    """Workers keep drill rows by (id, version); a rolled-back test database reuses ids."""
    from fastpath import grading_drills

    grading_drills.forget()


@pytest.fixture(scope="session", autouse=True)
def private_broker_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | None]:
    """Point the filesystem broker at folders of this session that do not exist yet."""
    from quizsite.celery import app, ensure_broker_folders

    if not str(app.conf.broker_url).startswith("filesystem:"):
        yield None  # a Redis broker from the environment: the suites use their own key prefixes
        return
    root = tmp_path_factory.mktemp("broker") / "var" / "broker"
    saved = app.conf.broker_transport_options
    app.conf.broker_transport_options = {
        **saved,
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
        "processed_folder": str(root / "processed"),
        "control_folder": str(root / "control"),
    }
    ensure_broker_folders(app.conf)  # what the app does when it reads its configuration
    publish_to_configured_broker()
    yield root
    app.conf.broker_transport_options = saved
    publish_to_configured_broker()


# ------------------------------------------------------------------------------ integration


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The test Redis; skips the test when none answers. Other suites share the database, so
    only the keys under ``CELERY_PREFIX`` are deleted after the session."""
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
        keys = list(client.scan_iter(match=f"{CELERY_PREFIX}*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()


def database_url(alias: str = "default") -> str:
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
    the in-memory database is kept alive by holding its connection meanwhile. A live server
    thread shares this process's connection object, so it follows the switch.
    """
    conn = connections["default"]
    if conn.vendor != "sqlite" or not conn.is_in_memory_db():
        yield database_url()
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


# The key prefix of the module now using ``celery_on_redis``; its ``Workers`` use the same one.
module_celery_prefix = CELERY_PREFIX


@pytest.fixture(scope="module")
def celery_on_redis(redis_url: str) -> Iterator[str]:
    """Point this process's Celery app at the test Redis, so on-commit enqueues reach the worker.

    Each module gets queues of its own (a key prefix under ``CELERY_PREFIX``): a message one
    module left behind, or published while another module's workers run, is never taken by a
    worker started with another module's settings.
    """
    global module_celery_prefix
    from quizsite.celery import app

    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    module_celery_prefix = f"{CELERY_PREFIX}{uuid.uuid4().hex[:8]}:"
    app.conf.broker_url = redis_url
    app.conf.broker_transport_options = {**settings.REDIS_TRANSPORT_OPTIONS, "global_keyprefix": module_celery_prefix}
    publish_to_configured_broker()
    yield redis_url
    app.conf.broker_url, app.conf.broker_transport_options = saved
    module_celery_prefix = CELERY_PREFIX
    publish_to_configured_broker()


class Worker:
    """One ``celery worker`` subprocess (its own process group, so it can be killed whole)."""

    def __init__(
        self, env: dict[str, str], log: Path, queues: str, concurrency: int, extra_args: tuple[str, ...] = ()
    ) -> None:
        self.log = log
        self.name = f"test-{uuid.uuid4().hex[:8]}@%h"
        command = [sys.executable, "-m", "celery", "-A", "quizsite", "worker", "-n", self.name, "-l", "INFO"]
        command += ["-Q", queues, "-c", str(concurrency), *extra_args]
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
        """SIGKILL the whole worker: the worker process and its sandbox processes."""
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
    """Starts workers on ``queues`` that see the test database and the test Redis; stops them all."""

    def __init__(
        self,
        database_url: str,
        redis_url: str,
        logs: Path,
        queues: str,
        extra_env: dict[str, str] | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.logs = logs
        self.queues = queues
        self.extra_args = extra_args  # e.g. ("-B", "--schedule", path): the worker runs beat too
        self.started: list[Worker] = []
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))},
            "DJANGO_SETTINGS_MODULE": "quizsite.settings",
            "SECRET_KEY": settings.SECRET_KEY,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "CELERY_KEY_PREFIX": module_celery_prefix,
            # Every worker process starts a warm sandbox pool: keep it to one child on the CPU.
            "GRADER_POOL_SIZE": "1",
            "GRADER_DEVICE": "cpu",
            **(extra_env or {}),
        }

    def start(self, concurrency: int = 2) -> Worker:
        log = self.logs / f"worker-{len(self.started)}.log"
        worker = Worker(self.env, log, self.queues, concurrency, self.extra_args)
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


# ------------------------------------------------------------------------------ publishing


@dataclass(frozen=True)
class Published:
    """One task message as the broker got it: name, JSON-decoded arguments, routing key (the queue)."""

    task: str
    args: list[Any]
    kwargs: dict[str, Any]
    queue: str


@contextmanager
def published_tasks() -> Iterator[list[Published]]:
    """Every task message this process publishes meanwhile (Celery's ``after_task_publish``, which
    fires only once the broker accepted the message)."""
    sent: list[Published] = []

    def record(sender: str, headers: dict[str, Any], body: Any, routing_key: str, **kwargs: Any) -> None:
        args, task_kwargs, _ = loads(dumps(body))  # protocol 2 body, through JSON as the worker reads it
        sent.append(Published(headers["task"], args, task_kwargs, routing_key))

    after_task_publish.connect(record, weak=False, dispatch_uid="tests.teams.published")
    try:
        yield sent
    finally:
        after_task_publish.disconnect(dispatch_uid="tests.teams.published")


@contextmanager
def celery_broker(url: str, **options: Any) -> Iterator[None]:
    """Publish to another broker meanwhile (Celery's own configuration, not a stand-in)."""
    from quizsite.celery import app

    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    app.conf.broker_url, app.conf.broker_transport_options = url, options
    publish_to_configured_broker()
    try:
        yield
    finally:
        app.conf.broker_url, app.conf.broker_transport_options = saved
        publish_to_configured_broker()


# ------------------------------------------------------------------------------ browser
# Playwright's own browser download cannot work here, so browser tests use Debian's chromium
# (`make browser` installs it) and skip with that reason when it is missing.

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser(django_db_setup: None) -> Iterator[Any]:
    """One chromium per module, started after the test database exists.

    Playwright's sync API keeps an event loop running in this thread while it is open, which
    Django's ORM guard takes for async code; the guard is lifted for exactly that span, and
    the loop ends with the module so later tests in the same worker are unaffected.
    """
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium) to run browser tests")
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            yield launched
            launched.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous
