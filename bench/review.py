"""The review hot path at scale: next card + recording a review, 100k cards and 1M review logs.

    .venv/bin/python bench/review.py                      # SQLite file in /tmp, built once, reused
    .venv/bin/python bench/review.py --rebuild --requests 500
    .venv/bin/python bench/review.py --database-url postgres://postgres@127.0.0.1:5432/quizsite_bench

It builds a throwaway database (never the shared PostgreSQL ``test`` one): 100k cards over
20 notes, 100 learners each with 2,000 card states and 10,000 review logs (1M in all). It
then drives one learner through the real views with Django's test Client: ``GET /review/``
and the htmx rating POST that records the review and returns the next card. The baseline in
the same run is the same learner flow on a small database (1k cards, 10k logs), so the table
shows what the data volume costs. Targets (DESIGN.md): p50 <= 15 ms, p95 <= 40 ms server time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def configure(database_url: str) -> None:
    """Point Django at the throwaway database before django.setup()."""
    parsed = urlparse(database_url)
    if parsed.scheme.startswith("postgres") and parsed.path.strip("/") in ("test", "test_test"):
        raise SystemExit("refusing to use the shared PostgreSQL `test` database: pass a throwaway one")
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DEBUG", "1")
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ["QUIZSITE_VAR_DIR"] = tempfile.mkdtemp(prefix="quizsite-bench-review-")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizsite.settings")
    import django
    from django.test.utils import setup_test_environment

    django.setup()
    setup_test_environment()  # the test Client then records each response's template context


def build(prefix: str, cards: int, learners: int, states: int, logs: int, rng: random.Random) -> None:
    """Bulk-create notes, cards, learners, card states and review logs under ``prefix``."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from cards.models import Card, CardState, Note, ReviewLog

    notes = [
        Note.objects.create(slug=f"{prefix}-n{i}", path=f"{i}.md", title=f"n{i}", content="# x", content_hash="0")
        for i in range(20)
    ]
    Card.objects.bulk_create(
        [
            Card(
                key=f"{prefix}:{i}",
                note=notes[i % 20],
                kind="qa",
                front=f"{prefix} q{i}",
                back="a",
                front_html=f"<p>q{i}</p>",
                back_html="<p>a</p>",
                position=i,
                content_hash="0",
            )
            for i in range(cards)
        ],
        batch_size=5000,
    )
    ids = list(Card.objects.filter(note__in=notes).values_list("pk", flat=True))
    now = timezone.now()
    today = now.date()
    for n in range(learners):
        user = get_user_model().objects.create(username=f"{prefix}-u{n}")
        picks = rng.sample(ids, states)
        CardState.objects.bulk_create(
            [
                CardState(
                    user=user,
                    card_id=card_id,
                    due=today + timedelta(days=rng.randint(-30, 60)),
                    interval=5,
                    repetitions=2,
                    last_reviewed_at=now - timedelta(days=10),
                    version=1,  # a state row's version starts at 1; 0 is the form's "no state yet"
                )
                for card_id in picks
            ],
            batch_size=5000,
        )
        rows = []
        for j in range(logs):
            at = now - timedelta(days=rng.randint(0, 365), minutes=j)
            rows.append(
                ReviewLog(
                    user=user,
                    card_id=picks[j % states],
                    quality=4,
                    reviewed_at=at,
                    review_day=at.date(),
                    easiness_before="2.5",
                    interval_before=1,
                    repetitions_before=1,
                    easiness_after="2.5",
                    interval_after=2,
                    repetitions_after=2,
                    due_after=at.date(),
                )
            )
        ReviewLog.objects.bulk_create(rows, batch_size=5000)


def drive(username: str, requests: int, rng: random.Random) -> dict[str, list[tuple[float, float]]]:
    """One learner reviews ``requests`` cards through the real views; returns (wall, CPU) seconds per request:
    the web process's CPU does not depend on how busy a shared machine is, its wall time does."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from cards.models import Profile

    user = get_user_model().objects.get(username=username)
    Profile.objects.update_or_create(user=user, defaults={"reviews_per_day": 10_000, "new_cards_per_day": 1000})
    client = Client()
    client.force_login(user)
    times: dict[str, list[tuple[float, float]]] = {"GET /review/": [], "POST rating + next card": []}
    for _ in range(requests):
        started, cpu = time.perf_counter(), time.process_time()
        page = client.get("/review/")
        times["GET /review/"].append((time.perf_counter() - started, time.process_time() - cpu))
        item = page.context["item"]
        if item is None:
            break
        started, cpu = time.perf_counter(), time.process_time()
        response = client.post(
            f"/review/{item.card.uuid}/rate/",
            {"quality": rng.choice([3, 4, 5]), "version": item.version},
            HTTP_HX_REQUEST="true",
        )
        times["POST rating + next card"].append((time.perf_counter() - started, time.process_time() - cpu))
        if response.status_code != 200:
            raise SystemExit(f"rating answered {response.status_code}")
        if response.context.get("messages") and list(response.context["messages"]):
            raise SystemExit("a rating was not recorded (the page says it was already rated): nothing measured")
    return times


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[round(p * (len(ordered) - 1))] * 1000


def timed(label: str, step: Callable[[], Any]) -> None:
    started = time.perf_counter()
    step()
    print(f"{label} in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="sqlite:////tmp/quizsite-bench-review.sqlite3")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rebuild", action="store_true", help="Drop and build the data again.")
    args = parser.parse_args()
    if args.rebuild and args.database_url.startswith("sqlite:///"):
        for suffix in ("", "-wal", "-shm"):
            Path(args.database_url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
    configure(args.database_url)
    from django.core.management import call_command

    from cards.models import Card, CardState, ReviewLog

    call_command("migrate", verbosity=0)
    rng = random.Random(2026)
    if not Card.objects.filter(key__startswith="big:").exists():
        timed("built 100k cards / 1M logs", lambda: build("big", 100_000, 100, 2000, 10_000, rng))
        timed("built the 1k-card baseline", lambda: build("small", 1000, 1, 500, 10_000, rng))
    # Databases built before 2026-12-07 left every state at version 0, the form's "no state yet": each rating
    # POST then answered "already rated" and recorded nothing. Their states start at 1, as a rating makes them.
    CardState.objects.filter(version=0).update(version=1)
    print(f"cards {Card.objects.count()}, review logs {ReviewLog.objects.count()}", file=sys.stderr)
    runs = {
        "100k cards, 1M logs": drive("big-u0", args.requests, rng),
        "baseline: 1k cards, 10k logs": drive("small-u0", args.requests, rng),
    }
    print("\n| data | request | n | p50 ms | p95 ms | mean ms | CPU p50 ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for data, times in runs.items():
        for request, pairs in times.items():
            seconds, cpu = [wall for wall, _ in pairs], [used for _, used in pairs]
            print(
                f"| {data} | {request} | {len(seconds)} | {percentile(seconds, 0.5):.1f} | "
                f"{percentile(seconds, 0.95):.1f} | {statistics.mean(seconds) * 1000:.1f} | "
                f"{percentile(cpu, 0.5):.1f} |"
            )
    print("\ntarget: p50 <= 15 ms, p95 <= 40 ms server time for next card + recording a review")


if __name__ == "__main__":
    main()
