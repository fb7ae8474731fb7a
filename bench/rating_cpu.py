"""CPU per request of the rating path (htmx rating POST that records the review and renders the next
card), this checkout against a baseline commit, in alternating rounds of the same minutes.

    .venv/bin/python bench/rating_cpu.py --baseline 833781d --database-url postgres://postgres@127.0.0.1:5432/quizsite_queue

Why CPU and not latency: the machine is shared, so wall time says more about the neighbours than about
the code; the web process's own CPU (``time.process_time``) and its PostgreSQL backend's CPU (from
/proc, PostgreSQL on this machine) do not depend on the load. Each side gets a scratch database
(``<name>_base`` / ``<name>_head``) with the bundled notes and drills imported by its own code, and a
fresh learner per round who rates new cards (Good) through Django's test client, as in bench/load.py;
drill cards are graded through ``record_graded`` outside the timed requests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[1]

DRIVE = r"""
import json, os, sys, time
sys.path.insert(0, os.getcwd())
import django; django.setup()
from django.test.utils import setup_test_environment; setup_test_environment()
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.utils import timezone
from cards.models import Profile
from cards.review import record_graded
user = get_user_model().objects.create(username=sys.argv[1])
Profile.objects.create(user=user, new_cards_per_day=1000, reviews_per_day=10000)
client = Client(); client.force_login(user)
with connection.cursor() as cursor:
    cursor.execute("SELECT pg_backend_pid()"); pid = cursor.fetchone()[0]
def db_cpu():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
def rate(item):
    data = {"quality": 4, "version": item.version}
    return client.post(f"/review/{item.card.uuid}/rate/", data, HTTP_HX_REQUEST="true")
page = client.get("/review/")
for _ in range(5):  # warm-up: the deck is read, templates compiled
    page = rate(page.context["item"])
n, cpu, db, wall = 0, 0.0, 0.0, 0.0
while n < int(sys.argv[2]):
    item = page.context["item"]
    if item is None:
        break
    if item.card.kind == "drill":
        record_graded(user, item.card, 5, timezone.now()); page = client.get("/review/"); continue
    c0, d0, w0 = time.process_time(), db_cpu(), time.perf_counter()
    page = rate(item)
    cpu += time.process_time() - c0; db += db_cpu() - d0; wall += time.perf_counter() - w0; n += 1
    assert page.status_code == 200, page.status_code
print("RESULT" + json.dumps({"n": n, "cpu": cpu / n * 1000, "db": db / n * 1000, "wall": wall / n * 1000}))
"""


def side_env(url: str, folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "quizsite.settings",
        "DEBUG": "0",
        "SECRET_KEY": "bench-queue",
        "ALLOWED_HOSTS": "testserver",
        "SITE_URL": "http://testserver",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "LOG_LEVEL": "ERROR",
        "QUIZSITE_VAR_DIR": str(folder),
    }


def scratch(url: str, create: bool) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name.startswith("quizsite_queue"):
        raise SystemExit(f"--database-url must name a scratch database quizsite_queue*, not {name!r}")
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if create:
            conn.execute(f'CREATE DATABASE "{name}"')


def prepare(code: Path, env: dict[str, str]) -> None:
    manage = [sys.executable, "manage.py"]
    steps = [["migrate", "-v", "0"], ["import_notes", "notes/", "-v", "0"], ["import_drills"]]
    if (code / "cards" / "management" / "commands" / "import_learning_order.py").exists():
        steps.append(["import_learning_order", "-v", "0"])
    for args in steps:
        subprocess.run(manage + args, cwd=code, env=env, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="833781d", help="The commit to compare with.")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/quizsite_queue")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=60)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="quizsite-bench-queue-"))
    base = folder / "base"
    subprocess.run(["git", "worktree", "add", "--detach", str(base), args.baseline], cwd=REPO, check=True)
    sides = {"baseline " + args.baseline: base, "this checkout": REPO}
    urls = {label: f"{args.database_url}_{i}" for i, label in enumerate(sides)}
    results: dict[str, list[dict[str, float]]] = {label: [] for label in sides}
    try:
        for label, code in sides.items():
            scratch(urls[label], create=True)
            prepare(code, side_env(urls[label], folder))
        for round_ in range(args.rounds):
            for label, code in sides.items():
                out = subprocess.run(
                    [sys.executable, "-c", DRIVE, f"bench{round_}", str(args.requests)],
                    cwd=code,
                    env=side_env(urls[label], folder),
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                results[label].append(json.loads(out.split("RESULT", 1)[1]))
    finally:
        for url in urls.values():
            scratch(url, create=False)
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO, check=False)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"\n{args.rounds} alternating rounds of {args.requests} ratings each; load average after: {load}\n")
    print("| code | web CPU ms / rating | PostgreSQL CPU ms / rating | wall ms / rating |")
    print("| --- | ---: | ---: | ---: |")
    for label, rows in results.items():
        cells = [statistics.median(r[key] for r in rows) for key in ("cpu", "db", "wall")]
        print(f"| {label} | {cells[0]:.1f} | {cells[1]:.1f} | {cells[2]:.1f} |")
    print("(medians over the rounds; PostgreSQL CPU counted in 10 ms clock ticks, summed over a round)")


if __name__ == "__main__":
    main()
