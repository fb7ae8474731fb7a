"""Grading benchmark: submit -> verdict through Celery + Redis + the warm sandbox pool, against
the naive baseline (a fresh ``python`` process per submission that imports torch), in one run.

    .venv/bin/python bench/grading.py                 # defaults: 200 sequential, 200 burst, 4 baseline
    .venv/bin/python bench/grading.py --concurrency 4 --workers 2

It needs a Redis (``BENCH_REDIS_URL``, default redis://127.0.0.1:6379/13; its keys carry a
``bench-grading-<pid>:`` prefix and are deleted at the end) and makes its own SQLite database
in a temporary folder, then starts the same worker command ``make run`` uses (its three queues: an
accepted verdict's drill XP and boards are work the worker does too). Submissions go round-robin to
``--learners`` learners. Latency is measured by this process: from just before
``graders.attempts.submissions.submit`` (the use case the page and the API call: rate limit, review seed, row
insert, on-commit publish) until it sees the final row.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def configure(tmp: Path, redis_url: str) -> dict[str, str]:
    """Environment for this process and the worker: our own database and Redis database."""
    env = {
        "DJANGO_SETTINGS_MODULE": "quizsite.settings",
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "REDIS_URL": redis_url,
        "QUIZSITE_VAR_DIR": str(tmp),
        "LOG_LEVEL": "WARNING",
        "CELERY_KEY_PREFIX": f"bench-grading-{os.getpid()}:",  # never touches anyone else's keys
        "GRADER_RATE_LIMIT": "1000000",  # one learner sends every submission of the benchmark
        "GRADER_CPU_FALLBACK": "1",  # make run's worker: cuda drills grade on the CPU
    }
    os.environ.update(env)
    return {**os.environ, **env}


def busy_cpu_seconds() -> float:
    """CPU time the whole machine spent busy so far (every process: worker, sandbox, Redis, this one)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """Direct children of every thread of ``pid`` (the sandbox pool starts its zygote from a thread)."""
    found = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def _cpu(pid: int) -> tuple[float, float]:
    """(own, reaped children's) CPU seconds of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def _is_launcher(pid: int) -> bool:
    """The sandbox pool's launcher: ``python -I -c BOOT`` (a prefork pool child runs ``celery``)."""
    try:
        return b"-I" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False


def cpu_by_role(workers: list[subprocess.Popen[bytes]]) -> dict[str, float]:
    """CPU seconds so far of each kind of process in the grading path (where a verdict's CPU goes).

    Jobs run in the worker process (threads, solo) or in its prefork pool children; either holds the
    sandbox pool, whose launcher starts the zygote. The runners are single-use and reaped by their
    zygote, so they show as its children's time.
    """
    roles: dict[str, float] = defaultdict(float)
    roles["web side (this process: submit, publish, polling)"] = sum(_cpu(os.getpid()))
    for worker in workers:
        roles["Celery worker process (consume; claim, grade, compare, finish)"] += _cpu(worker.pid)[0]
        graders = [worker.pid]
        for child in _children(worker.pid):
            if not _is_launcher(child):
                roles["Celery prefork pool children (claim, grade, compare, finish)"] += _cpu(child)[0]
                graders.append(child)
        for grader in graders:
            for launcher in filter(_is_launcher, _children(grader)):
                roles["sandbox launchers (every runner's warden)"] += _cpu(launcher)[0]
                for own, runners in map(_cpu, _children(launcher)):
                    roles["sandbox zygotes (fork, reap)"] += own
                    roles["sandbox runners (one per verdict)"] += runners
    try:
        roles["Redis"] = _cpu(int(subprocess.check_output(["pgrep", "-x", "redis-server"]).split()[0]))[0]
    except (OSError, subprocess.CalledProcessError, IndexError, ValueError):
        pass
    return dict(roles)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


DEFAULT_DRILLS = "cross-entropy-from-logits,index-assign-rows,softmax-dim,stack-scalars,masked-softmax,narrow-slice"


def load_mix(slugs: list[str]) -> list[tuple[Any, list[str]]]:
    """Drills from notes/drills with submissions: the reference (accepted) twice and the starter (not)."""
    from django.conf import settings

    from graders.drills.schema import load_drills

    drills = load_drills(settings.GRADER_DRILLS_DIR)
    specs = [drills[slug] for slug in slugs if slug in drills]
    if not specs:
        raise SystemExit(f"no drills under {settings.GRADER_DRILLS_DIR}")
    return [(spec, [spec.reference, spec.reference, spec.starter]) for spec in specs]


def store_drills(mix: list[tuple[Any, list[str]]]) -> list[tuple[Any, list[str]]]:
    from pathlib import Path as _Path

    from cards.models import Card, Note
    from graders.management.commands.import_drills import card_fields, card_key, drill_fields
    from graders.models import Drill

    stored = []
    for i, (spec, codes) in enumerate(mix):
        note, _ = Note.objects.get_or_create(
            slug=_Path(spec.source.note).stem,
            defaults={"path": spec.source.note, "title": spec.source.note, "content": "", "content_hash": ""},
        )
        card = Card.objects.create(key=card_key(spec.slug), **card_fields(spec, note, i))
        text = _Path(spec.path).read_text(encoding="utf-8")
        stored.append((Drill.objects.create(slug=spec.slug, card=card, **drill_fields(spec, text, spec.path)), codes))
    return stored


QUEUES = "grade_cpu,grade_gpu,celery"  # make run's worker: grading, and the teams' drill XP and boards


def start_worker(
    env: dict[str, str], pool: str | None, concurrency: int, log: Path, name: str = "bench", queues: str = QUEUES
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "quizsite", "worker", "-l", "INFO", "-n", f"{name}@%h"]
    command += ["-Q", queues, "-c", str(concurrency)] + (["--pool", pool] if pool else [])
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    env = {**env, "LOG_LEVEL": "INFO"}
    out = log.open("wb")
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while " ready." not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    return process


PENDING_SQL = "SELECT COUNT(*) FROM graders_submission WHERE id BETWEEN %s AND %s AND status IN ('queued', 'running')"


def pending_between(first: int, last: int) -> int:
    """A raw count, so polling every millisecond costs this process (and the 2 cores) little."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(PENDING_SQL, [first, last])
        return int(cursor.fetchone()[0])


def create_submission(user: Any, drill: Any, code: str) -> Any:
    from graders.attempts.submissions import submit

    submission = submit(user, drill, code)
    if not hasattr(submission, "pk"):
        raise SystemExit(f"the submission was refused: {submission}")
    return submission


def submit_and_wait(user: Any, drill: Any, code: str) -> tuple[float, str]:
    from graders.models import Submission

    started = time.perf_counter()
    pk = create_submission(user, drill, code).pk
    while pending_between(pk, pk):
        time.sleep(0.001)
    return (time.perf_counter() - started) * 1000, Submission.objects.values_list("status", flat=True).get(pk=pk)


def sequential(
    users: list[Any], stored: list[tuple[Any, list[str]]], n: int
) -> tuple[list[float], list[str], list[int]]:
    from graders.models import Submission

    jobs = [(drill, code) for drill, codes in stored for code in codes]
    latencies, statuses = [], []
    first = Submission.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    for i in range(n):
        drill, code = jobs[i % len(jobs)]
        ms, status = submit_and_wait(users[i % len(users)], drill, code)
        latencies.append(ms)
        statuses.append(status)
    return latencies, statuses, list(Submission.objects.filter(pk__gt=first).values_list("pk", flat=True))


def breakdown(pks: list[int]) -> dict[str, float]:
    """Median of each stage, from the row's own timestamps (same clock: one machine)."""
    from graders.models import Submission

    rows = Submission.objects.filter(pk__in=pks).values_list("queued_at", "claimed_at", "finished_at", "grading_ms")
    pickup = [(s - q).total_seconds() * 1000 for q, s, _, _ in rows]
    grading = [float(g) for *_, g in rows]
    rest = [(f - s).total_seconds() * 1000 - g for _, s, f, g in rows]
    return {
        "queued -> claimed (insert, commit, publish, Redis, worker pickup)": percentile(pickup, 50),
        "grading (sandbox run + compare)": percentile(grading, 50),
        "claimed -> final, minus grading (claim, drill lookup)": percentile(rest, 50),
    }


def burst(
    users: list[Any],
    stored: list[tuple[Any, list[str]]],
    n: int,
    workers: list[subprocess.Popen[bytes]],
    queues: str = QUEUES,
) -> tuple[list[float], float, float, dict[str, float]]:
    """n submissions committed at once; latency per row = its finished_at - the burst's send time.

    Also the machine's busy CPU per verdict over the burst (on 2 cores it bounds verdicts/s), and how
    it splits between the processes of the grading path, counted until the tasks the verdicts set off
    have run too.
    """
    from django.db import transaction

    from graders.models import Submission

    jobs = [(drill, code) for drill, codes in stored for code in codes]
    roles_before = cpu_by_role(workers)
    cpu_before = busy_cpu_seconds()
    sent_wall = time.time()
    started = time.perf_counter()
    with transaction.atomic():
        pks = [create_submission(users[i % len(users)], *jobs[i % len(jobs)]).pk for i in range(n)]
    while pending_between(pks[0], pks[-1]):
        time.sleep(0.01)  # the rows' own finish times give the latencies: polling only detects the end
    elapsed = time.perf_counter() - started
    if "celery" in queues:
        settle()  # the CPU counted includes what the verdicts set off (the teams' drill XP and boards)
    cpu_ms = (busy_cpu_seconds() - cpu_before) * 1000 / n
    roles = {role: (spent - roles_before.get(role, 0.0)) * 1000 / n for role, spent in cpu_by_role(workers).items()}
    finished = Submission.objects.filter(pk__in=pks).values_list("finished_at", flat=True)
    return [(f.timestamp() - sent_wall) * 1000 for f in finished], n / elapsed, cpu_ms, roles


def baseline(stored: list[tuple[Any, list[str]]], n: int, parallel: int) -> tuple[list[float], float]:
    """The naive grader: every submission in a cold process that imports torch (``run_once``)."""
    from graders.drills.grading import grade
    from graders.sandbox import run_once

    class ColdRunner:
        device = "cpu"

        def run(self, code: str, entry_point: str, cases: Any, **kwargs: Any) -> Any:
            return run_once(code, entry_point, cases, **kwargs)

        def make_cases(self, specs: Any, **kwargs: Any) -> Any:
            from graders.drills.local import LocalRunner

            return LocalRunner().make_cases(specs, **kwargs)  # the bundled drills' cases, made once per seed

    specs = [(d.spec, codes) for d, codes in stored]
    jobs = [(spec, code) for spec, codes in specs for code in codes][:n]
    for spec in {spec.slug: spec for spec, _ in jobs}.values():
        grade(spec, spec.reference, seed=1, runner=ColdRunner())  # references cached: only the learner pays

    def one(job: tuple[Any, str]) -> float:
        started = time.perf_counter()
        grade(job[0], job[1], seed=1, runner=ColdRunner())
        return (time.perf_counter() - started) * 1000

    latencies = [one(job) for job in jobs[: max(1, n // 2)]]
    started = time.perf_counter()
    with ThreadPoolExecutor(parallel) as executor:
        list(executor.map(one, jobs))
    return latencies, len(jobs) / (time.perf_counter() - started)


def settle(timeout: float = 60.0) -> None:
    """Wait until the worker's housekeeping queue (``celery``) has been empty for longer than one teams
    refresh interval (plus half a second, for the last task to run): beat's tick has recomputed the days the
    verdicts marked. (The broker keeps no record of a message being processed: no ack emulation.)"""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    prefix = os.environ["CELERY_KEY_PREFIX"]
    quiet_for = settings.TEAMS_REFRESH_INTERVAL + 0.5
    quiet_since = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = client.llen(f"{prefix}celery")
        now = time.monotonic()
        quiet_since = None if busy else (quiet_since or now)
        if quiet_since is not None and now - quiet_since >= quiet_for:
            return
        time.sleep(0.05)


def cleanup_redis(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)


def row(name: str, latencies: list[float], rate: float) -> str:
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    return f"| {name} | {len(latencies)} | {p50:.1f} | {p95:.1f} | {rate:.1f} |"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, torch {torch.__version__}"


def timed(label: str, fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = fn()
    print(f"# {label}: {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequential", type=int, default=200, help="submissions sent one at a time")
    parser.add_argument("--burst", type=int, default=200, help="submissions committed at once")
    parser.add_argument("--baseline", type=int, default=4, help="cold-process submissions (about 2.5 s each)")
    parser.add_argument("--learners", type=int, default=20, help="submissions go round-robin to this many")
    parser.add_argument(
        "--queues", default=QUEUES, help="the worker's queues (grade_cpu,grade_gpu: a grading-only worker)"
    )
    parser.add_argument("--drills", default=DEFAULT_DRILLS, help="comma-separated drill slugs for the mix")
    parser.add_argument("--pool", choices=["threads", "solo"], help="default: CELERY_WORKER_POOL, as make run")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1, help="worker processes started (each with --concurrency)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    redis_url = os.getenv("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
    env = configure(tmp, redis_url)
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    users = [User.objects.create_user(f"bench{i}") for i in range(args.learners)]
    stored = store_drills(load_mix(args.drills.split(",")))
    workers = timed(
        "worker start",
        lambda: [
            start_worker(env, args.pool, args.concurrency, tmp / f"worker{i}.log", f"bench{i}", args.queues)
            for i in range(args.workers)
        ],
    )
    try:
        timed("warm-up", lambda: sequential(users, stored, 4 * len(stored) * args.concurrency))
        seq, statuses, seq_pks = timed("sequential", lambda: sequential(users, stored, args.sequential))
        burst_lat, burst_rate, burst_cpu, roles = timed(
            "burst", lambda: burst(users, stored, args.burst, workers, args.queues)
        )
    finally:
        for worker in workers:
            os.killpg(worker.pid, 15)
        for worker in workers:
            worker.wait(30)
    cleanup_redis(redis_url, env["CELERY_KEY_PREFIX"])
    base, base_rate = (
        timed("baseline", lambda: baseline(stored, args.baseline, os.cpu_count() or 1)) if args.baseline else ([], 0.0)
    )
    seq_rate = len(seq) / (sum(seq) / 1000)
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    print(f"\nmachine: {machine()}; load average {' '.join(load)}; SQLite (WAL); Redis {redis_url}")
    pool_size = os.getenv("GRADER_POOL_SIZE", "2")
    from django.conf import settings

    pool = args.pool or getattr(settings, "CELERY_WORKER_POOL", "prefork")
    print(
        f"worker: {args.workers} x --pool {pool} -c {args.concurrency} -Q {args.queues}, GRADER_POOL_SIZE={pool_size}"
    )
    print(f"learners: {args.learners}")
    print(f"drills: {', '.join(d.slug for d, _ in stored)}; verdicts seen: {sorted(set(statuses))}\n")
    print("| path | n | p50 ms | p95 ms | verdicts/s |")
    print("| --- | --- | --- | --- | --- |")
    print(row("warm: Celery + Redis + warm pool, one at a time", seq, seq_rate))
    print(row(f"warm: burst of {args.burst} committed at once", burst_lat, burst_rate))
    if base:  # --baseline 0 leaves it out (A/B runs of the warm path alone)
        print(row("baseline: fresh python process per submission", base, base_rate))
    print("\n| one at a time, median of each stage | ms |\n| --- | --- |")
    for stage, ms in breakdown(seq_pks).items():
        print(f"| {stage} | {ms:.1f} |")
    print(f"\nmachine CPU per verdict in the burst (all processes, both cores): {burst_cpu:.1f} ms")
    print("\n| where the CPU of one verdict goes (burst) | ms |\n| --- | --- |")
    for role, ms in roles.items():
        print(f"| {role} | {ms:.2f} |")
    print(f"| sum of the grading path's own processes | {sum(roles.values()):.2f} |")
    if base:
        p50_ratio = percentile(base, 50) / percentile(seq, 50)
        print(f"\nbaseline p50 / warm p50 = {p50_ratio:.0f}x; throughput ratio = {burst_rate / base_rate:.0f}x")


if __name__ == "__main__":
    main()
