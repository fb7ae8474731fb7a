"""Team board and team page timings: 50 members, 100k review logs, on a throwaway SQLite file.

    .venv/bin/python bench/boards.py [--members 50] [--logs 100000] [--runs 30]

Prints, per page, the query count and the server time (p50 / p95 through Django's test client,
so middleware, the view and the template are all included) computed from the database, and from
Redis when one answers (TEST_REDIS_URL, else redis://127.0.0.1:6379/14, under a throwaway key
prefix that is deleted afterwards). The baseline in the same run is the board computed straight
from ReviewLog with the same rules, which is what the daily rollup saves. Targets: < 15 queries
and < 100 ms per page.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

DB_PATH = Path("/tmp/quizsite-bench-boards.sqlite3")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["DATABASE_URL"] = f"sqlite:///{DB_PATH}"
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
os.environ.setdefault("QUIZSITE_VAR_DIR", "/tmp/quizsite-bench-var")
os.environ.setdefault("ALLOWED_HOSTS", "testserver")
# The test client talks plain HTTP: no HTTPS redirect (production settings turn it on with DEBUG off).
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ["REDIS_URL"] = ""
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizsite.settings")

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.signals import request_finished, request_started  # noqa: E402
from django.db import close_old_connections, connection  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.urls import reverse  # noqa: E402

from cards.models import Card, Note, ReviewLog  # noqa: E402
from teams import boards, services  # noqa: E402
from teams.models import Membership, Team  # noqa: E402
from teams.xp import ReviewFact, board_score, review_totals  # noqa: E402

DAYS = 120
CARDS = 600


def build(members: int, logs: int, seed: int) -> tuple[Team, object]:
    """A team of ``members`` learners with ``logs`` reviews between them over ``DAYS`` days."""
    rng = random.Random(seed)
    user_model = get_user_model()
    users = user_model.objects.bulk_create(user_model(username=f"learner{i:03d}") for i in range(members))
    note = Note.objects.create(slug="bench", path="bench.md", title="bench", content="#", content_hash="0")
    cards = Card.objects.bulk_create(
        Card(
            key=f"{i:064x}",
            note=note,
            kind="qa",
            front=f"q{i}",
            back="a",
            front_html="q",
            back_html="a",
            content_hash="0",
            position=i,
        )
        for i in range(CARDS)
    )
    team = Team.objects.create(name="Bench Team", slug="bench-team-000000", time_zone="UTC")
    Membership.objects.bulk_create(
        Membership(team=team, user=u, role="owner" if i == 0 else "member") for i, u in enumerate(users)
    )
    first_day = datetime.now(tz=UTC).date() - timedelta(days=DAYS)
    rows = []
    for n in range(logs):
        user, day = users[n % members], first_day + timedelta(days=rng.randrange(DAYS))
        interval = rng.choice([0, 1, 6, 15, 25, 40])
        rows.append(
            ReviewLog(
                user=user,
                card=cards[rng.randrange(CARDS)],
                quality=rng.choice([1, 3, 4, 4, 5, 5]),
                reviewed_at=datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(hours=12),
                review_day=day,
                is_same_day_repeat=rng.random() < 0.05,
                easiness_before=Decimal("2.50"),
                interval_before=interval,
                repetitions_before=2,
                easiness_after=Decimal("2.50"),
                interval_after=interval + 1,
                repetitions_after=3,
                due_after=day + timedelta(days=interval + 1),
            )
        )
    ReviewLog.objects.bulk_create(rows, batch_size=5000)
    return team, users[1]


def baseline_board(team: Team) -> list[tuple[float, int]]:
    """The board straight from ReviewLog, same rules, no rollup: what the bench compares against."""
    facts: dict[int, list[ReviewFact]] = {}
    ids = list(team.memberships.values_list("user_id", flat=True))
    rows = ReviewLog.objects.filter(user_id__in=ids).values_list(
        "user_id", "card_id", "review_day", "quality", "interval_before", "is_same_day_repeat", "source"
    )
    for uid, card, day, q, interval, repeat, source in rows.iterator(chunk_size=5000):
        facts.setdefault(uid, []).append(ReviewFact(card, day, q, interval, repeat, source))
    out = []
    for f in facts.values():
        t = review_totals(f)
        out.append((board_score(t.xp, t.mature_reviews, t.mature_passed), t.xp))
    return sorted(out, reverse=True)


def measure(fn: Callable[[], object], runs: int) -> tuple[float, float, int]:
    fn()  # warm caches and, for Redis, fill the keys
    times = []
    with CaptureQueriesContext(connection) as ctx:
        fn()
    queries = len(ctx.captured_queries)
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)], queries


def pages(client: Client, team: Team) -> dict[str, Callable[[], object]]:
    def get(url: str) -> Callable[[], object]:
        def call() -> object:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            return response

        return call

    return {
        "team page": get(reverse("teams:detail", args=[team.slug])),
        "board, this week": get(reverse("teams:board", args=[team.slug]) + "?period=week"),
        "board, all time": get(reverse("teams:board", args=[team.slug]) + "?period=all"),
        "team stats (SVG)": get(reverse("teams:stats", args=[team.slug])),
    }


def report(title: str, fns: dict[str, Callable[[], object]], runs: int) -> None:
    print(f"\n{title}")
    print(f"{'page':<24} {'queries':>7} {'p50 ms':>8} {'p95 ms':>8}  verdict")
    for name, fn in fns.items():
        p50, p95, queries = measure(fn, runs)
        ok = "ok" if queries < 15 and p95 < 100 else "OVER TARGET"
        print(f"{name:<24} {queries:>7} {p50:>8.1f} {p95:>8.1f}  {ok}")


def remove_db() -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DB_PATH}{suffix}").unlink(missing_ok=True)


def keep_connection_open() -> None:
    """Like Django's test runner: one connection for the whole run, so query capture sees every request."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=50)
    parser.add_argument("--logs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    remove_db()
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    team, viewer = build(args.members, args.logs, args.seed)
    print(f"{args.members} members, {ReviewLog.objects.count()} review logs ({time.perf_counter() - started:.1f} s)")
    started = time.perf_counter()
    result = services.rebuild_all(dry_run=False)
    print(f"rebuild_boards: {result['learners']} learners in {time.perf_counter() - started:.2f} s")
    keep_connection_open()
    client = Client()
    client.force_login(viewer)
    base_p50, base_p95, base_q = measure(lambda: baseline_board(team), max(3, args.runs // 10))
    print(f"baseline, board straight from ReviewLog: {base_q} queries, p50 {base_p50:.1f} ms, p95 {base_p95:.1f} ms")
    today = datetime.now(tz=UTC).date()
    todays = list(ReviewLog.objects.filter(user=viewer).order_by("-pk")[:20])
    for log in todays:
        log.pk, log.review_day = None, today
    ReviewLog.objects.bulk_create(todays)  # no signal: the refresh below is what the signal would run
    refresh = lambda: services.refresh_learner_day(viewer.pk, today)  # noqa: E731
    p50, p95, queries = measure(refresh, args.runs)
    print(f"on-commit refresh after one rating: {queries} queries, p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    report("from the database (REDIS_URL empty)", pages(client, team), args.runs)
    url = os.environ.get("TEST_REDIS_URL") or "redis://127.0.0.1:6379/14"
    conn = redis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        conn.ping()
    except redis.RedisError as exc:
        print(f"\nRedis at {url} not answering ({exc}): Redis figures skipped")
        remove_db()
        return
    key_prefix = f"bench-boards-{uuid.uuid4().hex[:8]}:"
    try:
        with override_settings(REDIS_URL=url, TEAMS_BOARD_PREFIX=key_prefix):
            boards.rebuild()
            report(f"from Redis ({url}, prefix {key_prefix})", pages(client, team), args.runs)
    finally:
        keys = list(conn.scan_iter(match=f"{key_prefix}*"))
        if keys:
            conn.delete(*keys)
    connection.close()
    remove_db()


if __name__ == "__main__":
    main()
