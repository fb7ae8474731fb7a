"""The team calibration page at 100k reviews: computed per request (before) against served from the cache (now).

    DEBUG=1 .venv/bin/python bench/calibration.py                          # SQLite in /tmp, 100k reviews
    DEBUG=1 .venv/bin/python bench/calibration.py --database-url postgres://postgres@127.0.0.1:5432/quizsite_bench \\
        --redis-url redis://127.0.0.1:6379/15                              # as deployed: PostgreSQL and Redis

It builds its own throwaway database (never DATABASE_URL's), a team of ``--learners`` learners whose review logs
add up to ``--reviews`` (each card reviewed at growing intervals, recalled about nine times in ten), and then,
in one run and one process:

1. before: what the team page did per GET until issue 36 (read every member's log, score it, draw the charts);
2. the job the scoring worker now runs instead (``teams.tasks.calibrate_team``: the same, then cached);
3. the page now, through Django's test client, with the report cached (p50/p95 server time and its queries),
   and with newer reviews than the report (the last report is served: the same work plus a cache miss).

The cache is this process's memory unless ``--redis-url`` names a Redis (keys under a prefix of their own,
deleted after). Target (issue 36): the page under 200 ms at 100k reviews.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_DB = "/tmp/quizsite-bench-calibration.sqlite3"
TARGET_MS = 200


def configure(database_url: str, redis_url: str) -> str:
    """Point Django at the throwaway database (and the cache at Redis) before it is imported."""
    parsed = urlparse(database_url)
    if parsed.scheme.startswith("postgres") and parsed.path.strip("/") in ("test", "test_test"):
        raise SystemExit("refusing to use the shared PostgreSQL `test` database: pass a throwaway one")
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DEBUG", "1")
    os.environ["ALLOWED_HOSTS"] = "testserver,localhost"
    os.environ["QUIZSITE_VAR_DIR"] = tempfile.mkdtemp(prefix="quizsite-bench-calibration-")
    os.environ["LOG_LEVEL"] = "WARNING"
    prefix = f"bench-calibration-{uuid.uuid4().hex[:8]}"
    if redis_url:
        os.environ["REDIS_URL"] = redis_url  # the cache (and the broker: the page's one publish goes there)
        os.environ["CACHE_KEY_PREFIX"] = prefix
        os.environ["CELERY_KEY_PREFIX"] = f"{prefix}:"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizsite.settings")
    import django

    django.setup()
    return prefix


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


def make_team(learners: int, reviews: int, rng: random.Random) -> tuple[Any, Any]:
    """A team whose members' logs add up to about ``reviews``; returns the team and its first member."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from cards.models import Card, Note, Profile, ReviewLog
    from teams.models import Membership, Team

    note = Note.objects.create(slug="bench", path="notes/bench.md", title="bench", content="# bench", content_hash="0")
    per_card = 12
    cards = [
        Card(
            key=f"{n:064x}",
            note=note,
            kind="qa",
            front=f"q{n}",
            back=f"a{n}",
            front_html=f"<p>q{n}</p>",
            back_html=f"<p>a{n}</p>",
            heading_path="bench",
            anchor=f"bench-{n}",
            position=n,
            content_hash=f"{n:064x}",
        )  # fmt: skip
        for n in range(max(1, reviews // (learners * per_card)) + 1)
    ]
    Card.objects.bulk_create(cards)
    card_ids = list(Card.objects.filter(note=note).values_list("pk", flat=True))
    team = Team.objects.create(name="Bench", slug="bench-team", time_zone="UTC")
    users = []
    for index in range(learners):
        user = get_user_model().objects.create_user(f"learner{index}", password=None)
        Profile.objects.create(user=user, time_zone="UTC")
        Membership.objects.create(team=team, user=user, role="owner" if index == 0 else "member")
        users.append(user)
    batch: list[ReviewLog] = []
    written = 0
    start = date(2025, 1, 1)
    with transaction.atomic():
        for user in users:
            for card_id in card_ids:
                day, interval = start + timedelta(days=rng.randint(0, 120)), 1
                for _ in range(per_card):
                    if written >= reviews:
                        break
                    quality = 4 if rng.random() < 0.9 else 1
                    batch.append(_log(user.pk, card_id, day, quality, interval))
                    written += 1
                    interval = 1 if quality < 3 else min(365, max(1, round(interval * rng.uniform(1.8, 2.8))))
                    day += timedelta(days=interval)
                if len(batch) >= 5000:
                    ReviewLog.objects.bulk_create(batch)
                    batch = []
        ReviewLog.objects.bulk_create(batch)
    return team, users[0]


def _log(user_id: int, card_id: int, day: date, quality: int, interval: int) -> Any:
    from cards.models import ReviewLog

    return ReviewLog(
        user_id=user_id, card_id=card_id, quality=quality, reviewed_at=datetime(day.year, day.month, day.day, 12,
        tzinfo=UTC), review_day=day, easiness_before=2.5, interval_before=interval, repetitions_before=1,
        easiness_after=2.5, interval_after=interval, repetitions_after=1, due_after=day + timedelta(days=interval),
    )  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def timed(work: Any, runs: int) -> list[float]:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def page_timings(client: Any, url: str, requests: int) -> tuple[list[float], int, str]:
    """Per-request milliseconds, the queries of one request, and the page's calibration state."""
    from django.db import connection

    executed: list[str] = []

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        executed.append(sql)
        return execute(sql, params, many, context)

    client.get(url)  # warm: templates, URL resolver
    with connection.execute_wrapper(count):
        html = client.get(url).content.decode()
    state = html.split('data-calibration="', 1)[1].split('"', 1)[0] if "data-calibration" in html else "?"
    return timed(lambda: client.get(url), requests), len(executed), state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=f"sqlite:///{DEFAULT_DB}")
    parser.add_argument("--redis-url", default="", help="a Redis for the cache, as deployed (default: memory)")
    parser.add_argument("--reviews", type=int, default=100_000)
    parser.add_argument("--learners", type=int, default=8)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--before-runs", type=int, default=3, help="per-request computations timed (seconds each)")
    args = parser.parse_args()
    prefix = configure(args.database_url, args.redis_url)
    fresh_database(args.database_url)

    from django.test import Client
    from django.urls import reverse

    from cards import calibrating
    from cards.models import ReviewLog
    from teams.tasks import calibrate_team

    rng = random.Random(36)
    team, owner = make_team(args.learners, args.reviews, rng)
    logged = ReviewLog.objects.count()
    members = list(team.memberships.values_list("user_id", flat=True))
    before = timed(lambda: calibrating.contexts(calibrating.reviews_of(members), None, 0.9), args.before_runs)
    job = timed(lambda: calibrate_team(team.pk), 2)
    client = Client()
    client.force_login(owner)
    url = reverse("teams:calibration", args=[team.slug])
    cached, cached_queries, cached_state = page_timings(client, url, args.requests)
    some_card = ReviewLog.objects.values_list("card_id", flat=True).first()
    ReviewLog.objects.bulk_create([_log(owner.pk, some_card, date(2026, 1, 1), 4, 1)])
    stale, stale_queries, stale_state = page_timings(client, url, args.requests)
    if args.redis_url:
        import redis

        conn = redis.Redis.from_url(args.redis_url)
        keys = list(conn.scan_iter(match=f"{prefix}*"))
        if keys:
            conn.delete(*keys)

    print(f"team calibration page, {logged:,} reviews of {args.learners} learners "
          f"({'PostgreSQL' if 'postgres' in args.database_url else 'SQLite'}, cache: "
          f"{'Redis' if args.redis_url else 'memory'})")  # fmt: skip
    print(f"{'what':<52} {'p50 ms':>9} {'p95 ms':>9} {'queries':>8}")
    rows = [
        ("before: computed per GET (read, score, draw)", before, "-"),
        ("job on the scoring worker (compute + cache)", job, "-"),
        (f"page now, report cached ({cached_state})", cached, str(cached_queries)),
        (f"page now, newer reviews than the report ({stale_state})", stale, str(stale_queries)),
    ]
    for name, values, queries in rows:
        print(f"{name:<52} {statistics.median(values):>9.1f} {percentile(values, 95):>9.1f} {queries:>8}")
    ratio = statistics.median(before) / statistics.median(cached)
    verdict = "meets" if percentile(cached, 95) < TARGET_MS else "misses"
    print(f"page p95 {percentile(cached, 95):.1f} ms {verdict} the {TARGET_MS} ms target; {ratio:.0f}x faster at p50")


if __name__ == "__main__":
    main()
