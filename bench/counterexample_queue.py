"""Counterexamples as a learner meets them, through the real worker (issue 41 item 2): how long after the verdict
the counterexample is on the page, and whether the counterexample jobs delay other learners' verdicts.

``bench/counterexample.py`` times the search alone, in process. This one runs ``make run``'s worker command
(Celery + Redis + the sandbox pool, ``-Q`` as scripts/supervisord.conf, 2 threads, 2 runners) on its own SQLite
database, and two phases:

1. **Verdict to counterexample shown.** Each known-wrong solution that fails only hidden cases (chosen as
   ``bench/counterexample.py`` chooses them) is submitted by a learner of its own through
   ``graders.attempts.submissions.submit``; once this process sees the verdict it polls the counterexample fragment
   (``graders:submission_counterexample``, the real view and template, through Django's test client) the way
   the page does: 300 ms after the verdict, then every 300 ms, until it is final. Reported: verdict to
   "shown" (the poll that rendered it), and verdict to the job's own ``finished_at`` (the page's polling
   removed), p50 / p95 / max.
2. **Other learners' verdicts.** For ``--seconds`` a learner submits an accepted solution of a quick drill, waits
   for its verdict, pauses 100 ms, again; meanwhile other learners submit those known-wrong solutions, one every
   ``--every`` seconds. Run twice on fresh workers, identical load: counterexamples on (``GRADER_COUNTEREXAMPLE_MS``
   2000) and off (0). Reported: the quick learner's submit-to-verdict p50 / p95 / max in each.

``--queues`` gives the grading worker's ``-Q`` and ``--counterexample-worker QUEUES`` starts a second worker as
scripts/supervisord.conf's counterexamples program (``nice -n 10``, one thread): make run's layout is
``--queues grade_cpu,grade_gpu,celery --counterexample-worker counterexample``; one worker for everything (the
layout before the counterexample queue, and docker compose's default) is
``--queues grade_cpu,grade_gpu,celery,counterexample``.

Usage: .venv/bin/python bench/counterexample_queue.py [--seconds 60] [--every 2.0]
It needs a Redis (``BENCH_REDIS_URL``, default redis://127.0.0.1:6379/13); its keys carry a per-run prefix.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import grading as stack  # noqa: E402  (bench/grading.py: the worker, the database, the drills)
from counterexample import hidden_only, known_wrong  # noqa: E402

QUICK_DRILL = "stack-scalars"
POLL_S = 0.3  # graders.web.views.POLL_MS: the fragment's "load delay:300ms"


def percentiles(values: list[float]) -> str:
    if not values:
        return "| - | - | - |"
    return f"| {stack.percentile(values, 50):.0f} | {stack.percentile(values, 95):.0f} | {max(values):.0f} |"


def candidates() -> list[tuple[str, str]]:
    """(slug, code) of each known-wrong solution that fails only hidden cases (in process: trusted code)."""
    from graders.drills import DRILLS_DIR, load_drills
    from graders.drills.grading import ReferenceCache, grade
    from graders.drills.local import LocalRunner

    drills = load_drills(DRILLS_DIR)
    runner, cache, found = LocalRunner(), ReferenceCache(), []
    for slug in sorted(drills):
        for _why, code in known_wrong(slug, drills[slug]):
            if hidden_only(grade(drills[slug], code, seed=None, runner=runner, cache=cache)):
                found.append((slug, code))
    return found


def store(slugs: list[str]) -> dict[str, Any]:
    from django.conf import settings

    from graders.drills.schema import load_drills

    specs = load_drills(settings.GRADER_DRILLS_DIR)
    stored = stack.store_drills([(specs[slug], []) for slug in slugs])
    return {slug: drill for slug, (drill, _codes) in zip(slugs, stored, strict=True)}


def learner(name: str) -> Any:
    from django.contrib.auth.models import User

    return User.objects.create_user(name)


def final(pk: int) -> bool:
    return not stack.pending_between(pk, pk)


def shown_after_verdict(user: Any, drill: Any, code: str) -> tuple[float, float, str] | None:
    """Submit, wait for the verdict, then poll the fragment as the page does: (ms to shown, ms to the job's end,
    found or the reason), or None when the verdict queued no counterexample (another seed, another verdict)."""
    from django.test import Client
    from django.urls import reverse

    from graders.models import Counterexample

    submission = stack.create_submission(user, drill, code)
    while not final(submission.pk):
        time.sleep(0.002)
    verdict_seen = time.perf_counter()
    submission.refresh_from_db()
    client = Client(HTTP_HOST="localhost")  # DEBUG's allowed hosts
    client.force_login(user)
    url = reverse("graders:submission_counterexample", args=[submission.uuid])
    time.sleep(POLL_S)
    if client.get(url).status_code == 404:
        return None
    while True:
        response = client.get(url)
        if response.status_code != 200:
            raise SystemExit(f"the fragment answered {response.status_code}")
        if "data-counterexample-pending" not in response.content.decode():
            break
        time.sleep(POLL_S)
    shown = (time.perf_counter() - verdict_seen) * 1000
    row = Counterexample.objects.get(submission=submission)
    job = (row.finished_at - submission.finished_at).total_seconds() * 1000
    result = row.result or {}
    return shown, job, "found" if result.get("found") else str(result.get("reason", "?"))


def mixed_load(quick: Any, code: str, wrong: list[tuple[Any, str]], seconds: float, every: float) -> list[float]:
    """The quick learner's verdict latencies (ms) while the others submit wrong code every ``every`` seconds."""
    latencies: list[float] = []
    start = time.perf_counter()
    next_wrong, turn = start, 0
    users = [learner(f"w{os.getpid()}-{time.monotonic_ns()}-{i}") for i in range(len(wrong))]
    while time.perf_counter() - start < seconds:
        sent = time.perf_counter()
        pk = stack.create_submission(quick, quick_drill_of(quick), code).pk
        while not final(pk):
            now = time.perf_counter()
            if now >= next_wrong:
                drill, wrong_code = wrong[turn % len(wrong)]
                stack.create_submission(users[turn % len(users)], drill, wrong_code)
                turn, next_wrong = turn + 1, next_wrong + every
            time.sleep(0.001)
        latencies.append((time.perf_counter() - sent) * 1000)
        pause_until = time.perf_counter() + 0.1
        while time.perf_counter() < pause_until:
            if time.perf_counter() >= next_wrong:
                drill, wrong_code = wrong[turn % len(wrong)]
                stack.create_submission(users[turn % len(users)], drill, wrong_code)
                turn, next_wrong = turn + 1, next_wrong + every
            time.sleep(0.001)
    return latencies


_QUICK: dict[int, Any] = {}


def quick_drill_of(user: Any) -> Any:
    return _QUICK[user.pk]


def start(env: dict[str, str], tmp: Path, name: str, queues: str, extra: list[str]) -> list[Any]:
    """The grading worker (2 threads), and for each of ``extra`` a worker as supervisord's counterexamples program
    runs it: ``nice -n 10``, one thread."""
    import subprocess

    workers = [stack.start_worker(env, None, 2, tmp / f"{name}.log", name, queues)]
    for i, worker_queues in enumerate(extra):
        log = tmp / f"{name}-x{i}.log"
        command = ["nice", "-n", "10", sys.executable, "-m", "celery", "-A", "quizsite", "worker", "-l", "INFO"]
        command += ["-n", f"{name}x{i}@%h", "-Q", worker_queues, "-c", "1"]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        out = log.open("wb")
        process = subprocess.Popen(command, cwd=REPO, env={**env, "LOG_LEVEL": "INFO"}, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + 120
        while " ready." not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the counterexample worker did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        workers.append(process)
    return workers


def stop(workers: list[Any]) -> None:
    for worker in workers:
        os.killpg(worker.pid, 15)
    for worker in workers:
        worker.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="each mixed-load phase")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between two hidden-only wrong submissions")
    parser.add_argument("--queues", default=stack.QUEUES, help="the grading worker's -Q")
    parser.add_argument("--counterexample-worker", default="", help="-Q of a second, niced worker: counterexample")
    parser.add_argument("--skip-shown", action="store_true", help="only the mixed-load phases")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-cex-"))
    redis_url = os.getenv("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
    env = stack.configure(tmp, redis_url)
    os.environ["CELERY_KEY_PREFIX"] = env["CELERY_KEY_PREFIX"] = f"bench-cex-{os.getpid()}:"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    found = candidates()
    drills = store(sorted({slug for slug, _ in found} | {QUICK_DRILL}))
    from graders.drills.schema import load_drills

    quick_code = load_drills(Path(env.get("GRADER_DRILLS_DIR", REPO / "notes" / "drills")))[QUICK_DRILL].reference
    wrong = [(drills[slug], code) for slug, code in found]
    extra = [args.counterexample_worker] if args.counterexample_worker else []
    print(f"known-wrong solutions failing only hidden cases: {len(found)}; worker -Q {args.queues}"
          + (f", and -Q {args.counterexample_worker} -c 1" if extra else ""))  # fmt: skip

    if not args.skip_shown:
        workers = start({**env, "GRADER_COUNTEREXAMPLE_MS": "2000"}, tmp, "shown", args.queues, extra)
        try:
            stack.sequential([learner("warm")], [(drills[QUICK_DRILL], [quick_code])], 8)
            rows = [shown_after_verdict(learner(f"s{i}"), drill, code) for i, (drill, code) in enumerate(wrong)]
        finally:
            stop(workers)
        done = [row for row in rows if row is not None]
        print(
            f"\n1. verdict to counterexample, {len(done)} counterexamples ({sum(r[2] == 'found' for r in done)} found)"
        )
        print("| measured | p50 ms | p95 ms | max ms |\n| --- | --- | --- | --- |")
        print("| verdict seen to counterexample shown (page polling every 300 ms) " + percentiles([r[0] for r in done]))
        print("| verdict finished_at to counterexample finished_at (the job) " + percentiles([r[1] for r in done]))

    results = {}
    for label, ms in (("off", "0"), ("on", "2000")):
        workers = start({**env, "GRADER_COUNTEREXAMPLE_MS": ms}, tmp, f"mixed-{label}", args.queues, extra)
        try:
            quick = learner(f"quick-{label}")
            _QUICK[quick.pk] = drills[QUICK_DRILL]
            stack.sequential([quick], [(drills[QUICK_DRILL], [quick_code])], 8)  # warm
            results[label] = mixed_load(quick, quick_code, wrong, args.seconds, args.every)
        finally:
            stop(workers)
    stack.cleanup_redis(redis_url, env["CELERY_KEY_PREFIX"])
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\n2. a learner's verdicts ({QUICK_DRILL}, accepted) while others fail hidden cases every {args.every} s, "
          f"{args.seconds:.0f} s each; load average {' '.join(load)}")  # fmt: skip
    print("| counterexamples | verdicts | p50 ms | p95 ms | max ms |\n| --- | --- | --- | --- | --- |")
    for label in ("off", "on"):
        print(f"| {label} | {len(results[label])} " + percentiles(results[label]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
