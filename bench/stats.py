"""Stats and browse pages under a heavy learner: 100k review logs over a year, one user.

    DEBUG=1 .venv/bin/python bench/stats.py                    # SQLite in /tmp, 100k logs, 20 requests per page
    DEBUG=1 .venv/bin/python bench/stats.py --logs 20000 --requests 10
    DEBUG=1 .venv/bin/python bench/stats.py --database-url postgres://.../quizsite_bench   # never the shared `test` DB

It builds its own throwaway database (SQLite at /tmp/quizsite-bench-stats.sqlite3 unless
told otherwise), imports the bundled notes, bulk-creates the review logs and card states
for one learner in Asia/Shanghai, then requests every page through Django's test Client
and prints p50/p95 server time and the query count per page. The target (DESIGN/issue):
under 15 queries and about 100 ms per page.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_DB = "/tmp/quizsite-bench-stats.sqlite3"
QUERY_LIMIT = 15
LIMIT_MS = 100


def configure(database_url: str) -> None:
    """Point Django at the throwaway database before it is imported; never at DATABASE_URL's."""
    parsed = urlparse(database_url)
    if parsed.scheme.startswith("postgres") and parsed.path.strip("/") in ("test", "test_test"):
        raise SystemExit("refusing to use the shared PostgreSQL `test` database: pass a throwaway one")
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DEBUG", "1")
    os.environ["ALLOWED_HOSTS"] = "testserver,localhost"
    os.environ["QUIZSITE_VAR_DIR"] = tempfile.mkdtemp(prefix="quizsite-bench-stats-")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizsite.settings")
    import django

    django.setup()


def fresh_database(database_url: str) -> None:
    from django.core.management import call_command

    sqlite = database_url.startswith("sqlite:///")
    if sqlite:
        path = Path(database_url.removeprefix("sqlite:///"))
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    call_command("migrate", verbosity=0)
    if not sqlite:  # a throwaway server database: empty it, schema kept
        call_command("flush", interactive=False, verbosity=0)
    call_command("import_notes", str(REPO / "notes"), verbosity=0)


def make_learner() -> Any:
    from django.contrib.auth import get_user_model

    from cards.models import Profile

    user = get_user_model().objects.create_user("heavy", password="bench-only-password")
    Profile.objects.create(user=user, time_zone="Asia/Shanghai")
    return user


def generate_logs(user: Any, count: int, rng: random.Random) -> int:
    """``count`` review logs spread over the last 365 learner days, the first one per card marked new."""
    from django.db import transaction

    from cards.models import Card, ReviewLog
    from cards.review import get_profile, learner_today

    profile = get_profile(user)
    card_ids = list(Card.objects.active().values_list("pk", flat=True))
    now = datetime.now(UTC)
    times = sorted(now - timedelta(seconds=rng.uniform(0, 365 * 86400)) for _ in range(count))
    seen: set[int] = set()
    batch: list[ReviewLog] = []
    with transaction.atomic():
        for when in times:
            card_id = rng.choice(card_ids)
            batch.append(_log(user.pk, card_id, when, learner_today(profile, when), card_id not in seen, rng))
            seen.add(card_id)
            if len(batch) >= 5000:
                ReviewLog.objects.bulk_create(batch)
                batch = []
        ReviewLog.objects.bulk_create(batch)
    return len(card_ids)


def _log(user_id: int, card_id: int, when: datetime, day: Any, new: bool, rng: random.Random) -> Any:
    from cards.models import ReviewLog

    quality = rng.choices([1, 3, 4, 5], weights=[10, 15, 55, 20])[0]
    interval = 0 if new else (rng.randint(1, 20) if rng.random() < 0.5 else rng.randint(21, 200))
    ease = Decimal(130 + 2 * rng.randint(0, 80)) / 100
    return ReviewLog(
        user_id=user_id,
        card_id=card_id,
        quality=quality,
        duration_ms=rng.randint(1500, 30000),
        reviewed_at=when,
        review_day=day,
        was_new=new,
        is_same_day_repeat=not new and rng.random() < 0.05,
        easiness_before=ease,
        interval_before=interval,
        repetitions_before=0 if new else rng.randint(1, 10),
        due_before=None if new else day,
        easiness_after=ease,
        interval_after=max(1, interval * 2),
        repetitions_after=1,
        due_after=day + timedelta(days=max(1, interval * 2)),
    )


def generate_states(user: Any, rng: random.Random) -> None:
    """A reviewed state for every active card, due from five days ago to two months ahead."""
    from cards.models import Card, CardState
    from cards.review import get_profile, learner_today

    today = learner_today(get_profile(user), datetime.now(UTC))
    states = [
        CardState(
            user=user,
            card_id=card_id,
            easiness=Decimal(130 + 2 * rng.randint(0, 80)) / 100,
            interval=rng.randint(1, 120),
            repetitions=rng.randint(1, 10),
            due=today + timedelta(days=rng.randint(-5, 60)),
            last_reviewed_at=datetime.now(UTC) - timedelta(days=rng.randint(1, 60)),
            last_review_day=today - timedelta(days=1),
            suspended=rng.random() < 0.02,
        )
        for card_id in Card.objects.active().values_list("pk", flat=True)
    ]
    CardState.objects.bulk_create(states)


def pages(user: Any) -> list[tuple[str, str]]:
    """The pages to time; the card page uses the card with the longest history."""
    from django.db.models import Count
    from django.urls import reverse

    from cards.models import Card, Note, ReviewLog

    note = Note.objects.annotate(n=Count("cards")).order_by("-n").first()
    busiest = ReviewLog.objects.filter(user=user).values("card_id").annotate(n=Count("id")).order_by("-n").first()
    card = Card.objects.get(pk=busiest["card_id"])
    deck = reverse("cards:deck", args=[note.slug])
    return [
        ("decks", reverse("cards:decks")),
        ("deck", deck),
        ("deck ?kind=qa&q=tensor&page=2", f"{deck}?kind=qa&q=tensor&page=2"),
        ("card", reverse("cards:card", args=[card.uuid])),
        ("stats", reverse("cards:stats")),
    ]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def measure(client: Any, url: str, requests: int) -> tuple[int, list[float], list[float], int]:
    """Status, per-request wall and CPU milliseconds, and the query count of one request.

    CPU time (this process; SQLite runs in it) is reported next to wall time because a
    shared machine's load stretches wall time without saying anything about the page.

    Queries are counted with an execute wrapper rather than CaptureQueriesContext:
    every request resets ``connection.queries`` and SQLite reconnects per request here.
    """
    from django.db import connection

    for _ in range(3):  # warm caches: templates, URL resolver, SQLite page cache
        client.get(url)
    executed: list[str] = []

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        executed.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        status = client.get(url).status_code
    timings, cpu = [], []
    for _ in range(requests):
        start, start_cpu = time.perf_counter(), time.process_time()
        client.get(url)
        timings.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return status, timings, cpu, len(executed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=f"sqlite:///{DEFAULT_DB}")
    parser.add_argument("--logs", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--reuse", action="store_true", help="Time the pages on the database a previous run left.")
    args = parser.parse_args()
    configure(args.database_url)

    from django.db import connection
    from django.test import Client

    rng = random.Random(args.seed)
    start = time.perf_counter()
    if args.reuse:
        from django.contrib.auth import get_user_model

        from cards.models import ReviewLog

        user = get_user_model().objects.get(username="heavy")
        print(f"reusing: {ReviewLog.objects.filter(user=user).count()} review logs")
    else:
        fresh_database(args.database_url)
        user = make_learner()
        cards = generate_logs(user, args.logs, rng)
        generate_states(user, rng)
        print(f"setup: {args.logs} review logs over 365 days across {cards} cards, {time.perf_counter() - start:.1f} s")
    print(f"database: {connection.vendor} {args.database_url}")

    client = Client()
    client.force_login(user)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs; {args.requests} requests per page after 3 warm-ups")
    target = f"within {QUERY_LIMIT} q / {LIMIT_MS} ms"
    print(f"\n| page | status | queries | p50 ms | p95 ms | max ms | CPU p50 ms | {target} |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, url in pages(user):
        status, timings, cpu, queries = measure(client, url, args.requests)
        p50, p95 = statistics.median(timings), percentile(timings, 95)
        ok = "yes" if status == 200 and queries < QUERY_LIMIT and p95 <= LIMIT_MS else "NO"
        cpu50 = statistics.median(cpu)
        print(f"| {name} | {status} | {queries} | {p50:.1f} | {p95:.1f} | {max(timings):.1f} | {cpu50:.1f} | {ok} |")


if __name__ == "__main__":
    main()
