"""Load test: concurrent learners reviewing and submitting drills through gunicorn, with locust headless.

Why: bench/review.py measures the server time of one request and bench/grading.py one verdict at a
time; this adds what only concurrency shows: gunicorn's queueing, the session and CSRF middleware,
database write contention while many learners rate cards at once (each rating is a transaction), and
grading under a web load (a submission row, the Celery hop, the worker's writes, the status polls).
Everything runs on this machine: a throwaway database (SQLite in a temporary folder, or a scratch
PostgreSQL database created and dropped here), gunicorn on 127.0.0.1, one Celery worker started the
way scripts/run.sh starts it, against Redis under a key prefix of its own (nothing else is touched,
nothing is flushed), and locust's library runner in this process for a bounded number of seconds.

Each learner rates the card shown (Good); when the card is a drill, and now and then outside the
queue, it opens a drill page, submits the reference solution or a wrong one, and polls the verdict
fragment every 300 ms as the page does. "submit -> verdict" is its own row: from before the POST to
the first poll that shows a final status. The per-learner grading rate limit is raised for the run
(GRADER_RATE_LIMIT): a simulated learner submits far more often than the default 10 per 60 s allows.

After the latency table it prints where the time went in the same window (bench/time_spent.py): CPU
seconds per process group and how busy the machine was second by second, gunicorn's own time per
endpoint against the client's latency (the difference is queueing), the worker's tasks, and the
submissions' queue wait and grading time from their rows. gunicorn runs as `make run` runs it
(gthread, 2 workers x 4 threads, keep-alive 75 s) and beat runs too.

Usage: .venv/bin/python bench/load.py [--users 16] [--seconds 20] [--warmup 15] [--think 0]
       [--workers 2] [--threads 4] [--keep-alive 75] [--concurrency 2] [--redis-url redis://127.0.0.1:6379/13]
       [--database-url postgres://postgres@127.0.0.1:5432/quizsite_load]
Exits 1 when any request failed, a verdict was wrong or late, or a learner raised.
"""

from __future__ import annotations

# locust patches the standard library with gevent when imported; it must come first.
from locust import FastHttpUser, between, constant, task  # isort: skip
from locust.env import Environment  # isort: skip

import argparse
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import gevent
import psutil
from requests.cookies import create_cookie

sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_spent import (  # noqa: E402
    ACCESS_FORMAT,
    NAME_HEADER,
    CpuWindow,
    Group,
    Timing,
    cpu_table,
    latency_table,
    named,
    postgres_processes,
    read_access_log,
    read_task_log,
    task_table,
    timings,
    tree,
)

REPO = Path(__file__).resolve().parents[1]
_FORM = re.compile(r'<form class="ratings" method="post" action="([^"]+)"')
_VERSION = re.compile(r'name="version" value="(\d+)"')
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_OPEN_DRILL = re.compile(r'href="(/drills/card/[0-9a-f-]+/)" data-open-drill')
_SUBMIT = re.compile(r'<form class="drill-form" method="post" action="/drills/([\w-]+)/submit/"')
_SUBMISSION = re.compile(r'data-status="(\w+)" data-kind="\w+" data-submission="([0-9a-f-]+)"')
_POLLING = re.compile(r'hx-get="/drills/submissions/[0-9a-f-]+/status/"')
PENDING = {"queued", "running"}
POLL_SECONDS = 0.3  # graders.web.views.POLL_MS: what the page's htmx does
VERDICT_TIMEOUT = 120.0
RIGHT_SHARE = 0.6  # share of submissions that send the drill's reference solution
VERDICT_ROW = "submit -> verdict"
SESSIONS: list[str] = []
REFERENCES: dict[str, str] = {}  # drill slug -> its reference solution, read from notes/drills
WRONG_FITS: set[str] = set()  # the drills whose entry point is solution(), which WRONG_CODE defines
VERDICTS: Counter[str] = Counter()
TARGETS = {
    "POST rate": "p50 <= 15 ms, p95 <= 40 ms (server time, DESIGN.md)",
    VERDICT_ROW: "p50 <= 20 ms, p95 <= 50 ms (one at a time, DESIGN.md)",
}
WRONG_CODE = "import torch\n\n\ndef solution(*args):\n    return torch.full((3, 3), -7.0)\n"

SETUP = """
import json
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from cards.models import Profile
keys = []
for n in range({users}):
    user = get_user_model().objects.create_user(f"load{{n}}")
    Profile.objects.create(user=user, new_cards_per_day=1000, reviews_per_day=10000)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "cards.backends.ProfileBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    keys.append(session.session_key)
print("SESSIONS" + json.dumps(keys))
"""


@dataclass(frozen=True)
class Row:
    name: str
    requests: int
    failures: int
    p50: float
    p95: float
    p99: float
    rps: float
    mean: float = 0.0


class Learner(FastHttpUser):
    """A learner in a closed loop: rate the card shown (Good), do the drill when the card is one,
    now and then open a drill outside the queue, look at decks or health."""

    wait_time = constant(0)

    def on_start(self) -> None:
        self.client.cookiejar.set_cookie(create_cookie("sessionid", SESSIONS.pop(), domain="127.0.0.1"))
        self.page = self.get("/review/", "GET /review/").text

    def get(self, url: str, name: str, **kwargs: Any) -> Any:
        return self.call("GET", url, name, **kwargs)

    def call(self, method: str, url: str, name: str, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
        """Every request names itself in a header, so gunicorn's access log files it under the same row."""
        headers = {**(headers or {}), NAME_HEADER: name}
        return self.client.request(method, url, name=name, headers=headers, **kwargs)

    @task(8)
    def rate(self) -> None:
        drill = _OPEN_DRILL.search(self.page)
        if drill:  # a drill card: its verdict rates it, then the review moves on
            self.do_drill(drill.group(1), "GET /drills/card/<uuid>/ -> drill page")
            self.page = self.get("/review/", "GET /review/").text
            return
        action, version, token = _FORM.search(self.page), _VERSION.search(self.page), _CSRF.search(self.page)
        if not (action and version and token):  # nothing due: start over from the review page
            self.page = self.get("/review/", "GET /review/").text
            return
        data = {
            "quality": "4",
            "version": version.group(1),
            "duration_ms": "1500",
            "csrfmiddlewaretoken": token.group(1),
        }
        response = self.call("POST", action.group(1), "POST rate", data=data, headers={"HX-Request": "true"})
        self.page = response.text

    @task(1)
    def practise(self) -> None:
        self.do_drill(f"/drills/{random.choice(sorted(WRONG_FITS))}/", "GET /drills/<slug>/")

    @task(1)
    def decks(self) -> None:
        self.get("/decks/", "GET /decks/")

    @task(1)
    def health(self) -> None:
        self.get("/healthz?only=database", "GET /healthz?only=database")

    def do_drill(self, url: str, name: str) -> None:
        """Steps: 1. the drill page (form, CSRF token)  2. POST right or wrong code  3. poll to a verdict."""
        page = self.get(url, name).text
        form, token = _SUBMIT.search(page), _CSRF.search(page)
        if not (form and token):
            self.fire(name, 0.0, RuntimeError(f"no submit form on {url}"))
            return
        slug = form.group(1)
        # WRONG_CODE defines solution(): another entry point would make it a wrong answer for that reason alone.
        right = random.random() < RIGHT_SHARE or slug not in WRONG_FITS
        data = {"code": REFERENCES[slug] if right else WRONG_CODE, "kind": "submit"}
        data["csrfmiddlewaretoken"] = token.group(1)
        started = time.perf_counter()
        headers = {"HX-Request": "true"}
        with self.call(
            "POST", f"/drills/{slug}/submit/", "POST submit", data=data, headers=headers, catch_response=True
        ) as response:
            found = _SUBMISSION.search(response.text or "")
            if found is None:  # refused (rate limit, size) answers 200 to htmx with the message
                response.failure(f"no submission in the answer: {(response.text or '')[:200]!r}")
                return
        self.await_verdict(found.group(1), found.group(2), started, right)

    def await_verdict(self, status: str, uuid: str, started: float, right: bool) -> None:
        """Poll the fragment as htmx does; record the verdict once, keep polling while the page would."""
        url, polling, recorded = f"/drills/submissions/{uuid}/status/", True, False
        while True:
            if status not in PENDING and not recorded:
                VERDICTS[f"{'right' if right else 'wrong'} code -> {status}"] += 1
                # The reference must be accepted and the wrong code never: anything else is our fault.
                wrong = None if (status == "accepted") == right else RuntimeError(f"{uuid}: {status}")
                self.fire(VERDICT_ROW, (time.perf_counter() - started) * 1000, wrong)
                recorded = True
            if recorded and not polling:
                return
            if time.perf_counter() - started > VERDICT_TIMEOUT:
                self.fire(VERDICT_ROW, VERDICT_TIMEOUT * 1000, TimeoutError(f"{uuid} still {status}"))
                return
            gevent.sleep(POLL_SECONDS)
            text = self.get(url, "GET submission status", headers={"HX-Request": "true"}).text or ""
            found = _SUBMISSION.search(text)
            if found is None:  # an error page: the poll itself is already counted as a failure
                self.fire(VERDICT_ROW, (time.perf_counter() - started) * 1000, RuntimeError(f"{uuid}: no status"))
                return
            status, polling = found.group(1), bool(_POLLING.search(text))

    def fire(self, name: str, ms: float, exception: Exception | None = None) -> None:
        self.environment.events.request.fire(
            request_type="DRILL", name=name, response_time=ms, response_length=0, exception=exception, context={}
        )


def load_references() -> tuple[dict[str, str], set[str]]:
    """The drills' reference solutions straight from their files, and which of them WRONG_CODE fits.

    Every drill counts: a drill card with another entry point (``diag``) comes up in the review queue too.
    """
    found, fits = {}, set()
    for path in sorted((REPO / "notes" / "drills").rglob("*.toml")):
        drill = tomllib.loads(path.read_text(encoding="utf-8"))
        found[drill["slug"]] = drill["reference"]
        if drill.get("entry_point") == "solution":
            fits.add(drill["slug"])
    return found, fits


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def site_env(folder: Path, database_url: str, redis_url: str, prefix: str) -> dict[str, str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(folder)),
        "QUIZSITE_VAR_DIR": str(folder),
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SITE_URL": "http://127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "LOG_LEVEL": "WARNING",
        "REDIS_URL": redis_url,
        "CELERY_KEY_PREFIX": prefix,
        "TEAMS_BOARD_PREFIX": f"{prefix}boards:",
        # 200 learners submit far more often than people do: the limit would refuse them, not the load.
        "GRADER_RATE_LIMIT": "100000",
        "GRADER_RATE_WINDOW": "60",
        "GRADER_POOL_SIZE": os.environ.get("GRADER_POOL_SIZE", "2"),
        "GRADER_CPU_FALLBACK": "1",  # one box, as make run: cuda drills grade on the CPU
    }
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def prepare(env: dict[str, str], users: int) -> list[str]:
    """1. migrate, 2. import the notes and drills, 3. learners with ready sessions (no password hashing)."""
    manage = [sys.executable, "manage.py"]
    steps = [["migrate", "--noinput", "-v", "0"], ["import_notes", "notes/", "-v", "0"], ["import_drills"]]
    for args in [*steps, ["import_learning_order", "-v", "0"]]:
        subprocess.run(manage + args, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    return manage_shell(env, SETUP.format(users=users), "SESSIONS")


def manage_shell(env: dict[str, str], code: str, marker: str) -> Any:
    """Run ``code`` in ``manage.py shell`` with ``env``; the JSON it prints after ``marker``."""
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.split(marker, 1)[1])


def scratch_database(url: str, create: bool) -> None:
    """Create (fresh) or drop the scratch database; only names starting quizsite_load, never a shared one."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not re.fullmatch(r"quizsite_load\w*", name):
        raise SystemExit(f"--database-url must name a scratch database quizsite_load*, not {name!r}")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if create:
            conn.execute(f'CREATE DATABASE "{name}"')


def cleanup_redis(url: str, prefix: str) -> None:
    """Delete only this run's keys (its prefix); the database is shared and is never flushed."""
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)


def start_gunicorn(env: dict[str, str], port: int, args: argparse.Namespace, access: Path) -> subprocess.Popen[bytes]:
    """gunicorn as scripts/supervisord.conf runs it (gthread, keep-alive), its access log timing each request."""
    command = [sys.executable, "-m", "gunicorn", "quizsite.wsgi", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", str(args.workers), "--threads", str(args.threads), "--keep-alive", str(args.keep_alive)]
    command += ["--access-logfile", str(access), "--access-logformat", ACCESS_FORMAT, "--log-level", "warning"]
    command += ["--backlog", "2048", "--no-control-socket"]
    process = subprocess.Popen(command, cwd=REPO, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz?only=database", timeout=2) as response:
                if response.status == 200:
                    return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("gunicorn did not answer /healthz within 30 s")


def start_worker(env: dict[str, str], concurrency: int, log: Path) -> subprocess.Popen[bytes]:
    """The worker of scripts/run.sh (all three queues, jobs in threads), named apart from anyone else's."""
    command = [sys.executable, "-m", "celery", "-A", "quizsite", "worker", "-Q", "grade_cpu,grade_gpu,celery"]
    command += ["-c", str(concurrency), "-l", "INFO", "-n", f"load{os.getpid()}@%h"]
    out = log.open("wb")
    process = subprocess.Popen(
        command,
        cwd=REPO,
        # Each task's "succeeded in" line: the profile's task table (about 1 ms of CPU a task, settings.py).
        env={**env, "LOG_LEVEL": "INFO", "TASK_LOG_LEVEL": "INFO"},
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while " ready." not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    return process


def start_beat(env: dict[str, str], folder: Path) -> subprocess.Popen[bytes]:
    """Beat as `make run` runs it: its ticks (the teams refresh every second) are part of the load."""
    command = [sys.executable, "-m", "celery", "-A", "quizsite", "beat", "-l", "WARNING"]
    command += ["-s", str(folder / "celerybeat-schedule")]
    with (folder / "beat.log").open("wb") as out:
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


@dataclass
class Window:
    """What the profile needs about the measured window: its CPU and its slice of the access log."""

    cpu: CpuWindow
    access: Path
    worker_log: Path
    log_start: int = 0
    log_end: int = 0
    tasks_start: int = 0
    tasks_end: int = 0
    started_at: str = ""  # ISO, UTC: submissions queued from then on are the window's


def run_load(host: str, users: int, seconds: float, warmup: float, window: Window) -> list[Row]:
    """Warm up first (the worker starts its sandbox pool on the first task), then count from zero."""
    env = Environment(user_classes=[Learner], host=host)
    runner = env.create_local_runner()
    runner.start(users, spawn_rate=min(users, 50))  # locust warns above 100 a second
    gevent.sleep(warmup)
    env.stats.reset_all()
    VERDICTS.clear()
    window.started_at = datetime.now(UTC).isoformat()
    window.log_start, window.tasks_start = window.access.stat().st_size, window.worker_log.stat().st_size
    window.cpu.begin()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        gevent.sleep(min(1.0, max(deadline - time.monotonic(), 0.0)))
        window.cpu.sample()
    window.cpu.end()
    window.log_end, window.tasks_end = window.access.stat().st_size, window.worker_log.stat().st_size
    runner.quit()
    rows = []
    entries = [e for e in env.stats.entries.values() if e.num_requests or e.num_failures]
    for entry in sorted(entries, key=lambda e: (e.name == VERDICT_ROW, e.name)):
        pct = entry.get_response_time_percentile
        rows.append(
            Row(
                entry.name,
                entry.num_requests,
                entry.num_failures,
                pct(0.5),
                pct(0.95),
                pct(0.99),
                entry.total_rps,
                entry.avg_response_time,
            )
        )
    for error in env.stats.errors.values():
        print(f"error x{error.occurrences}: {error.method} {error.name}: {error.error}")
    # An exception inside a task is not a failed request to locust: count it here, or it would pass.
    crashes = sum(e["count"] for e in runner.exceptions.values())
    for crash in runner.exceptions.values():
        print(f"learner exception x{crash['count']}: {crash['msg']}\n{crash['traceback']}")
    if crashes:
        rows.append(Row("learner exceptions", 0, crashes, 0.0, 0.0, 0.0, 0.0))
    return rows


def print_table(rows: list[Row], header: str) -> None:
    print(f"\n{header}\n")
    print("| endpoint | requests | failures | p50 ms | p95 ms | p99 ms | req/s | target |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    http = [r for r in rows if r.name != VERDICT_ROW]
    for r in rows:
        if r.name == VERDICT_ROW:
            name = f"all HTTP | {sum(x.requests for x in http)} | {sum(x.failures for x in http)} | | | |"
            print(f"| {name} {sum(x.rps for x in http):.1f} | |")
        print(
            f"| {r.name} | {r.requests} | {r.failures} | {r.p50:.0f} | {r.p95:.0f} | {r.p99:.0f} | {r.rps:.1f} | "
            f"{TARGETS.get(r.name, '')} |"
        )
    print("\nverdicts: " + ", ".join(f"{k}: {n}" for k, n in sorted(VERDICTS.items())))
    print("(client-side latencies, queueing included; the targets are server time / one submission at a time)")


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        "unknown CPU",
    )
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return f"{cpu}, {os.cpu_count()} cores; load average before the run {load}"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=15.0, help="Seconds of load before counting starts.")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker (gthread), as make run")
    parser.add_argument("--keep-alive", type=int, default=75, help="gunicorn keep-alive seconds, as make run")
    parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes (-c)")
    parser.add_argument("--think", type=float, default=0.0, help="Mean think time between tasks, seconds.")
    parser.add_argument(
        "--database-url", default="", help="Scratch PostgreSQL quizsite_load*, created and dropped (default SQLite)."
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13", help="Broker (keys under a prefix).")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.think > 0:
        Learner.wait_time = between(args.think / 2, args.think * 1.5)
    references, fits = load_references()
    REFERENCES.update(references)
    WRONG_FITS.update(fits)
    folder = Path(tempfile.mkdtemp(prefix="quizsite-load-"))
    log = Path(tempfile.gettempdir()) / f"quizsite-load-worker-{os.getpid()}.log"  # kept when it has errors
    prefix = f"quizsite-load-{os.getpid()}:"
    header = f"{machine()}\n{args.users} learners, {args.seconds:.0f} s after {args.warmup:.0f} s warm-up, "
    header += f"think {args.think:g} s, gunicorn {args.workers} workers x {args.threads} threads, "
    header += f"keep-alive {args.keep_alive} s, Celery -c {args.concurrency} + beat on 127.0.0.1, "
    header += "PostgreSQL" if args.database_url else "SQLite"
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        (folder / "static").mkdir()  # WhiteNoise warns without it; the pages' assets are not under test
        if args.database_url:
            scratch_database(args.database_url, create=True)
        env = site_env(folder, args.database_url, args.redis_url, prefix)
        SESSIONS.extend(prepare(env, args.users))
        processes["worker"] = start_worker(env, args.concurrency, log)
        processes["beat"] = start_beat(env, folder)
        port, access = free_port(), folder / "access.log"
        processes["web"] = start_gunicorn(env, port, args, access)
        window = Window(CpuWindow(groups(processes, args.database_url)), access, log)
        rows = run_load(f"http://127.0.0.1:{port}", args.users, args.seconds, args.warmup, window)
        print_table(rows, header)
        print_profile(rows, window, submission_times(env, window.started_at))
        return 1 if any(r.failures for r in rows) else 0
    finally:
        stop(processes, log)
        cleanup_redis(args.redis_url, prefix)
        if args.database_url:
            scratch_database(args.database_url, create=False)
        shutil.rmtree(folder, ignore_errors=True)


def groups(processes: dict[str, subprocess.Popen[bytes]], database_url: str) -> list[Group]:
    """The CPU table's rows: the site's own process trees, then the shared servers, then this process."""
    found = [
        Group("gunicorn (master + workers)", lambda: tree(processes["web"].pid), is_tree=True),
        Group("Celery worker (+ sandbox pool)", lambda: tree(processes["worker"].pid), is_tree=True),
        Group("Celery beat", lambda: tree(processes["beat"].pid), is_tree=True),
    ]
    if database_url:
        name = urlsplit(database_url).path.lstrip("/")
        found.append(Group(f"PostgreSQL backends of {name}", postgres_processes(name), is_tree=False))
        found.append(Group("PostgreSQL server's own processes (shared)", postgres_processes(None), is_tree=False))
    found.append(Group("Redis server (shared)", named("redis-server"), is_tree=False))
    # Its own CPU only: the site's processes are its children, already counted above.
    found.append(Group("load generator (locust, this process)", lambda: [psutil.Process()], is_tree=False))
    return found


SUBMISSION_TIMES = """
import json
from graders.models import Submission
rows = Submission.objects.filter(queued_at__gte="{since}", finished_at__isnull=False, claimed_at__isnull=False)
times = list(rows.values_list("queued_at", "claimed_at", "finished_at"))
ms = lambda a, b: (b - a).total_seconds() * 1000
print("TIMES" + json.dumps({{
    "queued -> claimed (broker + worker queue)": [ms(q, c) for q, c, f in times],
    "claimed -> final (grading)": [ms(c, f) for q, c, f in times],
    "queued -> final (server side)": [ms(q, f) for q, c, f in times],
}}))
"""


def submission_times(env: dict[str, str], since: str) -> dict[str, Timing]:
    """The verdict's server side, from the submissions' own timestamps (jobs.models.Job)."""
    return timings(manage_shell(env, SUBMISSION_TIMES.format(since=since), "TIMES"))


def print_profile(rows: list[Row], window: Window, submissions: dict[str, Timing]) -> None:
    """Where the time went, after the latency table: CPU per process group, then server vs client time."""
    http = [r for r in rows if r.name != VERDICT_ROW and r.requests]
    print("\n".join(cpu_table(window.cpu, sum(r.requests for r in http))))
    server = timings(read_access_log(window.access, window.log_start, window.log_end))
    client = [Timing(r.name, r.requests, r.p50, r.p95, r.mean) for r in http]
    print("\n".join(latency_table(server, client)))
    tasks = timings(read_task_log(window.worker_log, window.tasks_start, window.tasks_end))
    print("\n".join(task_table(tasks, window.cpu.seconds)))
    verdict = next((r for r in rows if r.name == VERDICT_ROW and r.requests), None)
    if verdict is not None:
        print(f"\n{VERDICT_ROW}, client: p50 {verdict.p50:.0f} ms, p95 {verdict.p95:.0f} ms (polled every")
        print(f"{POLL_SECONDS * 1000:.0f} ms, as the page does); the same submissions' server side:\n")
        print("| submission | n | p50 ms | p95 ms | mean ms |\n| --- | ---: | ---: | ---: | ---: |")
        for t in submissions.values():
            print(f"| {t.name} | {t.requests} | {t.p50:.0f} | {t.p95:.0f} | {t.mean:.0f} |")


def stop(processes: dict[str, subprocess.Popen[bytes]], log: Path) -> None:
    for name in ("web", "beat"):
        if name in processes:
            processes[name].terminate()
            processes[name].wait(15)
    worker = processes.get("worker")
    if worker is not None:
        worker.terminate()  # warm shutdown: the main process lets its children finish their task
        worker.wait(60)
        try:  # then whatever it left in its group (sandbox zygotes), if anything
            os.killpg(worker.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        errors = [line for line in log.read_text(errors="replace").splitlines() if "ERROR" in line]
        if errors:
            print(f"worker log {log}: {len(errors)} ERROR lines", *errors[:10], sep="\n")
        else:
            print("worker log: 0 ERROR lines")
            log.unlink()


if __name__ == "__main__":
    sys.exit(main())
