"""Load test: concurrent learners reviewing through a real gunicorn on loopback, with locust headless.

Why: bench/review.py measures the server time of one request; this adds what only concurrency shows:
gunicorn's queueing, the session and CSRF middleware, and database write contention while many
learners rate cards at once (each rating is a transaction). Everything runs on this machine: a
throwaway database (SQLite in a temporary folder, or ``--database-url``), gunicorn on 127.0.0.1, and
locust's library runner in this process for a bounded number of seconds. It prints one row per
endpoint with the DESIGN.md targets beside it, and ``/healthz?only=database`` as the floor measured in
the same run (the cost of a request that does one query).

Usage: .venv/bin/python bench/load.py [--users 16] [--seconds 20] [--workers 2]
"""

from __future__ import annotations

# locust patches the standard library with gevent when imported; it must come first.
from locust import FastHttpUser, constant, task  # isort: skip
from locust.env import Environment  # isort: skip

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import gevent
from requests.cookies import create_cookie

REPO = Path(__file__).resolve().parents[1]
_FORM = re.compile(r'<form class="ratings" method="post" action="([^"]+)"')
_VERSION = re.compile(r'name="version" value="(\d+)"')
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
SESSIONS: list[str] = []
TARGETS = {"POST rate": "p50 <= 15 ms, p95 <= 40 ms (server time, DESIGN.md)"}

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


class Learner(FastHttpUser):
    """A learner in a closed loop: rate the card shown (Good), now and then look at decks or health."""

    wait_time = constant(0)

    def on_start(self) -> None:
        self.client.cookiejar.set_cookie(create_cookie("sessionid", SESSIONS.pop(), domain="127.0.0.1"))
        self.page = self.client.get("/review/", name="GET /review/").text

    @task(8)
    def rate(self) -> None:
        action, version, token = _FORM.search(self.page), _VERSION.search(self.page), _CSRF.search(self.page)
        if not (action and version and token):  # nothing due: start over from the review page
            self.page = self.client.get("/review/", name="GET /review/").text
            return
        data = {
            "quality": "4",
            "version": version.group(1),
            "duration_ms": "1500",
            "csrfmiddlewaretoken": token.group(1),
        }
        response = self.client.post(action.group(1), data=data, headers={"HX-Request": "true"}, name="POST rate")
        self.page = response.text

    @task(1)
    def decks(self) -> None:
        self.client.get("/decks/", name="GET /decks/")

    @task(1)
    def health(self) -> None:
        self.client.get("/healthz?only=database", name="GET /healthz?only=database")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def site_env(folder: Path, database_url: str) -> dict[str, str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(folder)),
        "QUIZSITE_VAR_DIR": str(folder),
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "LOG_LEVEL": "WARNING",
    }
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def prepare(env: dict[str, str], users: int) -> list[str]:
    """1. migrate, 2. import the bundled notes, 3. learners with ready sessions (no password hashing)."""
    manage = [sys.executable, "manage.py"]
    for args in (["migrate", "--noinput", "-v", "0"], ["import_notes", "notes/", "-v", "0"]):
        subprocess.run(manage + args, cwd=REPO, env=env, check=True)
    out = subprocess.run(
        manage + ["shell", "-c", SETUP.format(users=users)],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.split("SESSIONS", 1)[1])


def start_gunicorn(env: dict[str, str], port: int, workers: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "gunicorn", "quizsite.wsgi", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", str(workers), "--access-logfile", "/dev/null", "--log-level", "warning"]
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


def run_load(host: str, users: int, seconds: float) -> list[Row]:
    env = Environment(user_classes=[Learner], host=host)
    runner = env.create_local_runner()
    runner.start(users, spawn_rate=users)
    gevent.sleep(seconds)
    runner.quit()
    rows = []
    for entry in sorted(env.stats.entries.values(), key=lambda e: e.name):
        pct = entry.get_response_time_percentile
        rows.append(
            Row(entry.name, entry.num_requests, entry.num_failures, pct(0.5), pct(0.95), pct(0.99), entry.total_rps)
        )
    return rows


def print_table(rows: list[Row], users: int, seconds: float, workers: int) -> None:
    print(f"\n{users} learners, closed loop, {seconds:.0f} s, gunicorn {workers} workers on 127.0.0.1")
    print(
        f"{'endpoint':<28} {'requests':>8} {'fail':>5} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'req/s':>7}  target"
    )
    for r in rows:
        print(
            f"{r.name:<28} {r.requests:>8} {r.failures:>5} {r.p50:>7.0f} {r.p95:>7.0f} {r.p99:>7.0f} {r.rps:>7.1f}  "
            f"{TARGETS.get(r.name, '')}"
        )
    total = sum(r.rps for r in rows)
    print(f"{'all':<28} {sum(r.requests for r in rows):>8} {sum(r.failures for r in rows):>5} {'':>23} {total:>7.1f}")
    print("(latencies are client-side, queueing included; the target column is server time per request)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--database-url", default="", help="A scratch PostgreSQL database (default: SQLite).")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="quizsite-load-"))
    server = None
    try:
        (folder / "static").mkdir()  # WhiteNoise warns without it; the pages' assets are not under test
        env = site_env(folder, args.database_url)
        SESSIONS.extend(prepare(env, args.users))
        port = free_port()
        server = start_gunicorn(env, port, args.workers)
        rows = run_load(f"http://127.0.0.1:{port}", args.users, args.seconds)
        print_table(rows, args.users, args.seconds, args.workers)
        return 1 if any(r.failures for r in rows) else 0
    finally:
        if server is not None:
            server.terminate()
            server.wait(15)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
