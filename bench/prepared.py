"""The verdict path's reads: each through Django's queryset (the baseline) and compiled once
(``fastpath.prepared.Prepared``, what the path runs), interleaved in one process.

    .venv/bin/python bench/prepared.py              # SQLite in a temporary folder, 2,000 calls of each
    .venv/bin/python bench/prepared.py --database-url postgres://postgres@127.0.0.1:5432/quizsite_bench

Interleaving call by call puts both sides in the same minutes of a machine whose speed drifts, so the
ratio holds where the absolute figures do not. It also times the web side's whole ``submit()`` and the
worker's ``jobs.process()`` (claim, grade in the sandbox pool, finish) by the CPU of the calling thread,
which leaves out waiting for the sandbox and for Redis. Needs Redis (``BENCH_REDIS_URL``) for the
on-commit publish; its keys carry a prefix of this run and are deleted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def timed_pair(baseline: Callable[[], Any], prepared: Callable[[], Any], n: int) -> tuple[float, float]:
    """Median microseconds of each, the two called alternately; both must return the same rows."""
    assert _rows(baseline()) == _rows(prepared()), "the prepared query answers differently"
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(n):
        for side, call in enumerate((baseline, prepared)):
            started = time.perf_counter()
            call()
            times[side].append((time.perf_counter() - started) * 1e6)
    return statistics.median(times[0]), statistics.median(times[1])


def _rows(value: Any) -> Any:
    if isinstance(value, list):
        return [_rows(v) for v in value]
    if hasattr(value, "_meta"):
        return {k: v for k, v in vars(value).items() if k != "_state"}
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls of each query, each way")
    parser.add_argument("--submissions", type=int, default=400, help="submit() + process() pairs timed")
    parser.add_argument("--database-url", help="default: SQLite in a temporary folder")
    args = parser.parse_args()

    from bench.grading import DEFAULT_DRILLS, cleanup_redis, configure, load_mix, store_drills

    tmp = Path(tempfile.mkdtemp(prefix="bench-prepared-"))
    redis_url = os.getenv("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
    env = configure(tmp, redis_url)
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from cards.models import CardState
    from fastpath import card_states, drill_reviews
    from fastpath.grading_drills import grading_drill
    from fastpath.submission_window import limit_th_newest
    from graders.attempts.submissions import submit
    from graders.models import Drill, DrillReview, Submission
    from graders.rating import reviews
    from graders.warm_pool import close_pool, get_pool
    from jobs import lifecycle as jobs

    call_command("migrate", verbosity=0)
    learner = User.objects.create_user(f"bench-prepared-{os.getpid()}")
    stored = store_drills(load_mix(DEFAULT_DRILLS.split(",")))
    pool, kind = get_pool(), jobs.kind_named("submission")
    work = [(drill, code) for drill, codes in stored for code in codes]

    def one(i: int) -> tuple[float, float]:
        drill, code = work[i % len(work)]
        started = time.thread_time()
        row = submit(learner, drill, code)
        submitted = time.thread_time()
        with pool.busy():
            jobs.process(kind, row.pk, pool, worker="bench")
        return (submitted - started) * 1000, (time.thread_time() - submitted) * 1000

    try:
        for i in range(4 * len(work)):
            one(i)  # warm: the pool's runners, the reference cache, the statements
        split = [one(i) for i in range(args.submissions)]
        drill = stored[0][0]
        review = reviews.current_review(learner, drill).review
        since, limit = timezone.now() - timedelta(minutes=1), 10
        reads: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
            (
                "rate-limit window (the limit-th newest)",
                lambda: next(
                    iter(
                        Submission.objects.filter(user_id=learner.pk, queued_at__gt=since)
                        .order_by("-queued_at")
                        .values_list("queued_at", flat=True)[limit - 1 : limit]
                    ),
                    None,
                ),
                lambda: limit_th_newest(Submission, limit).first(user_id=learner.pk, since=since),
            ),
            (
                "the card's state",
                lambda: CardState.objects.filter(user_id=learner.pk, card_id=drill.card_id).first(),
                lambda: card_states.OF_CARD.first(user_id=learner.pk, card_id=drill.card_id),
            ),
            (
                "the latest review",
                lambda: DrillReview.objects.filter(user_id=learner.pk, drill_id=drill.pk).first(),
                lambda: drill_reviews.LATEST.first(user_id=learner.pk, drill_id=drill.pk),
            ),
            (
                "the open review (accepted attempt)",
                lambda: DrillReview.objects.filter(
                    user_id=learner.pk, drill_id=drill.pk, seed=review.seed, finished_at=None
                ).first(),
                lambda: drill_reviews.OPEN.first(user_id=learner.pk, drill_id=drill.pk, seed=review.seed),
            ),
            (
                "the drill's version (worker)",
                lambda: Drill.objects.filter(pk=drill.pk).values_list("version", flat=True).first(),
                lambda: grading_drill(drill.pk).version,
            ),
        ]
        results = [(name, *timed_pair(base, fast, args.calls)) for name, base, fast in reads]
    finally:
        close_pool()
        cleanup_redis(redis_url, env["CELERY_KEY_PREFIX"])

    print(f"\ndatabase: {connection.vendor}; {args.calls} calls of each read, the two ways alternating\n")
    print("| read | queryset us (baseline) | Prepared us | ratio |\n| --- | ---: | ---: | ---: |")
    for name, base, fast in results:
        print(f"| {name} | {base:.0f} | {fast:.0f} | {base / fast:.1f}x |")
    web, worker = (statistics.median(column) for column in zip(*split, strict=True))
    print(f"\n| per submission, thread CPU, median of {args.submissions} | ms |\n| --- | ---: |")
    print(f"| web side: `submit()` (checks, rate limit, review seed, insert, publish) | {web:.2f} |")
    print(f"| worker: `jobs.process()` (claim, grade without the sandbox's own CPU, finish) | {worker:.2f} |")


if __name__ == "__main__":
    main()
