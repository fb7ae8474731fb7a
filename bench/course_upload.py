"""Upload to cards: the five bundled notes (and their curated cards files) uploaded through the course page
into a team's course, against the same folder imported by ``manage.py import_course --team`` in the same run.

    .venv/bin/python bench/course_upload.py                    # 3 rounds, SQLite in a temporary folder
    .venv/bin/python bench/course_upload.py --rounds 5 --database-url postgres://postgres@127.0.0.1/qs_bench

Each round makes two fresh teams. The page path, through Django's test client (the views, forms, middleware
and templates a browser's requests meet, in this process): POST the files to the upload form (checked,
planned, kept: the preview), GET the import report, POST the confirmation (imported); then wait until the
real Celery worker this script starts (``celery -A quizsite worker -Q grade_cpu,celery``, the command
``make run`` supervises) has run every output card in its sandbox (each card verified or kept out of review).
The baseline: the same notes and cards files as a folder through ``import_course`` for the other team,
then the same wait (times in ms). It needs a
Redis (``BENCH_REDIS_URL``, default redis://127.0.0.1:6379/13; its keys carry a ``bench-course-<pid>:``
prefix and are deleted at the end). A PostgreSQL database named here is emptied first: never a shared one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
NOTES = REPO / "notes"
VERIFY_TIMEOUT = 600


def configure(tmp: Path, database_url: str, redis_url: str) -> dict[str, str]:
    parsed = urlparse(database_url)
    if parsed.scheme.startswith("postgres") and parsed.path.strip("/") in ("test", "quizsite", "h4"):
        raise SystemExit("refusing to empty a shared PostgreSQL database: name a throwaway one")
    env = {
        "DJANGO_SETTINGS_MODULE": "quizsite.settings",
        "DEBUG": "1",
        "ALLOWED_HOSTS": "testserver,localhost",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "QUIZSITE_VAR_DIR": str(tmp),
        "LOG_LEVEL": "WARNING",
        "CELERY_KEY_PREFIX": f"bench-course-{os.getpid()}:",
        "GRADER_POOL_SIZE": "1",
        "GRADER_CPU_FALLBACK": "1",
        "COURSE_UPLOADS_PER_HOUR": "1000",
    }
    os.environ.update(env)
    import django

    django.setup()
    return {**os.environ, **env}


def fresh_database(sqlite: bool) -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if not sqlite:
        call_command("flush", interactive=False, verbosity=0)


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "quizsite", "worker", "-l", "INFO", "-n", "bench@%h"]
    command += ["-Q", "grade_cpu,celery", "-c", "2", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    out = log.open("wb")
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env={**env, "LOG_LEVEL": "INFO"},
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while " ready." not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    return process


def bundled_files() -> list[tuple[str, bytes]]:
    """The five notes and their curated cards files, as a browser sends picked files (their names only:
    ``<stem>.toml`` beside ``<stem>.md`` is the note's cards file)."""
    files = [(path.name, path.read_bytes()) for path in sorted(NOTES.glob("*.md"))]
    return files + [(path.name, path.read_bytes()) for path in sorted((NOTES / "cards").glob("*.toml"))]


def new_team(owner: Any, name: str) -> Any:
    from teams import services

    return services.create_team(owner, name, "UTC")


def through_the_page(client: Any, team: Any) -> dict[str, float]:
    """Upload, read the report, confirm: each request's wall time (ms) as this process measures it."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from courses.models import Upload

    files = [SimpleUploadedFile(name, data) for name, data in bundled_files()]
    started = time.perf_counter()
    response = client.post(f"/courses/{team.slug}/upload/", {"files": files})
    preview = time.perf_counter()
    assert response.status_code == 302, response.content.decode()[-2000:]
    upload = Upload.objects.get(team=team)
    report = client.get(f"/courses/{team.slug}/uploads/{upload.uuid}/")
    assert report.status_code == 200
    read = time.perf_counter()
    response = client.post(f"/courses/{team.slug}/uploads/{upload.uuid}/confirm/")
    done = time.perf_counter()
    assert response.status_code == 302 and Upload.objects.get(pk=upload.pk).state == "confirmed"
    return {
        "preview (POST upload)": (preview - started) * 1000,
        "import report (GET)": (read - preview) * 1000,
        "confirm (POST)": (done - read) * 1000,
        "upload to cards": (done - started) * 1000,
    }


def notes_only(tmp: Path) -> Path:
    """The bundled folder less its drills and learning order: what the page path brings, for a fair baseline."""
    folder = tmp / "notes-only"
    (folder / "cards").mkdir(parents=True)
    for path in [*NOTES.glob("*.md"), *(NOTES / "cards").glob("*.toml")]:
        (folder / path.relative_to(NOTES)).write_bytes(path.read_bytes())
    return folder


def through_the_command(team: Any, folder: Path) -> dict[str, float]:
    from io import StringIO

    from django.core.management import call_command

    started = time.perf_counter()
    call_command("import_course", str(folder), "--team", team.slug, stdout=StringIO(), stderr=StringIO())
    return {"upload to cards": (time.perf_counter() - started) * 1000}


def wait_for_outputs(team: Any) -> tuple[float, dict[str, int]]:
    """Seconds until no output card of the team's course waits for the sandbox, and the states then."""
    from django.db.models import Count

    from outputs.models import OutputCheck

    team.refresh_from_db()
    checks = OutputCheck.objects.filter(card__note__course=team.course, in_note=True)
    started = time.perf_counter()
    while checks.filter(state=OutputCheck.State.PENDING).exists():
        if time.perf_counter() - started > VERIFY_TIMEOUT:
            raise SystemExit(f"the worker did not finish the output cards in {VERIFY_TIMEOUT} s")
        time.sleep(0.05)
    states = dict(checks.values_list("state").annotate(n=Count("pk")).order_by())
    return time.perf_counter() - started, states


def cards_of(team: Any) -> int:
    from cards.models import Card

    team.refresh_from_db()
    return Card.objects.filter(note__course=team.course).count()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="quizsite-bench-course-"))
    database_url = args.database_url or f"sqlite:///{tmp / 'bench.sqlite3'}"
    env = configure(tmp, database_url, os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13"))
    fresh_database(database_url.startswith("sqlite"))
    from django.contrib.auth import get_user_model
    from django.test import Client

    owner = get_user_model().objects.create_user("bench-owner")
    client = Client()
    client.force_login(owner)
    folder = notes_only(tmp)
    worker = start_worker(env, tmp / "worker.log")
    rows: dict[str, dict[str, list[float]]] = {"page": {}, "import_course": {}}
    try:
        for round_ in range(args.rounds):
            for path in ("page", "import_course"):
                team = new_team(owner, f"{path} {round_}")
                timings = through_the_page(client, team) if path == "page" else through_the_command(team, folder)
                seconds, states = wait_for_outputs(team)
                timings["then outputs verified (ms)"] = seconds * 1000
                timings["upload to outputs verified"] = timings["upload to cards"] + seconds * 1000
                for name, value in timings.items():
                    rows[path].setdefault(name, []).append(value)
                print(
                    f"round {round_ + 1} {path}: {cards_of(team)} cards, outputs {states}, "
                    + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()),
                    flush=True,
                )
    finally:
        os.killpg(worker.pid, 15)
        worker.wait(timeout=30)
        cleanup_redis(env)
    print(
        f"\nmedians over {args.rounds} rounds ({'PostgreSQL' if not database_url.startswith('sqlite') else 'SQLite'}):"
    )
    print(f"{'':<34}{'page':>12}{'import_course':>16}")
    for name in rows["page"]:
        other = rows["import_course"].get(name)
        base = f"{statistics.median(other):>16.0f}" if other else f"{'-':>16}"
        print(f"{name:<34}{statistics.median(rows['page'][name]):>12.0f}{base}")


def cleanup_redis(env: dict[str, str]) -> None:
    import redis

    conn = redis.Redis.from_url(env["REDIS_URL"])
    keys = list(conn.scan_iter(match=f"{env['CELERY_KEY_PREFIX']}*", count=1000))
    if keys:
        conn.delete(*keys)


if __name__ == "__main__":
    main()
