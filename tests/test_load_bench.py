"""bench/load.py's profile: where the CPU and the time go during the measured window.

The short form runs the bench as a person does (a subprocess: gunicorn, a Celery worker, beat, locust,
SQLite, the test Redis) and checks the tables after the latency table; the accounting underneath is
checked against processes whose CPU is known.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from time_spent import (  # noqa: E402
    ACCESS_FORMAT,
    CpuWindow,
    Group,
    percentile,
    postgres_processes,
    read_access_log,
    read_task_log,
    tree,
)

BURN = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


def burn(seconds: float) -> list[str]:
    return [sys.executable, "-c", BURN.format(s=seconds)]


def test_it_leaves_out_what_other_process_trees_burn() -> None:
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE) as idle:
        window = CpuWindow([Group("idle", lambda: tree(idle.pid), is_tree=True)])
        window.begin()
        subprocess.run(burn(0.4), check=True)
        window.end()
        idle.kill()
    assert window.used["idle"] < 0.05
    assert window.machine >= 0.3  # the machine saw the burn


def test_it_counts_reaped_children_of_a_live_root() -> None:
    """A sandbox runner lives milliseconds and is never seen: its CPU comes back in its parent's."""
    code = f"import subprocess, sys; sys.stdin.readline(); subprocess.run({burn(0.4)!r}); print('done', flush=True)"
    code += "; sys.stdin.read()"
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as root:
        assert root.stdin is not None and root.stdout is not None
        group = Group("tree", lambda: tree(root.pid), is_tree=True)
        window = CpuWindow([group])
        window.begin()
        root.stdin.write("go\n")
        root.stdin.flush()
        assert root.stdout.readline() == "done\n"  # the child burnt 0.4 s, exited and was reaped
        assert psutil.Process(root.pid).children() == []
        window.end()
        root.kill()
    assert 0.4 <= window.used["tree"] <= 1.5  # the child's burn, its start-up and its parent's wait


def test_it_samples_a_shared_process_from_its_value_at_the_start() -> None:
    child = subprocess.Popen(burn(0.6))
    try:
        group = Group("shared", lambda: [psutil.Process(child.pid)], is_tree=False)
        window = CpuWindow([group])
        window.begin()
        time.sleep(0.2)
        window.sample()
        window.end()
        start = next(iter(group.start.values()))
        last = next(iter(group.last.values()))
        assert window.used["shared"] == pytest.approx(last - start)
        assert window.used["shared"] > 0
    finally:
        child.kill()
        child.wait(10)


def test_it_files_access_log_lines_under_the_clients_names_and_skips_the_rest(tmp_path: Path) -> None:
    assert ACCESS_FORMAT.endswith("%(D)s")
    log = tmp_path / "access.log"
    before = "POST rate\t200\t999000\n"
    inside = "POST rate\t200\t12500\nGET /review/\t200\t3000\nPOST rate\t302\t7500\ngarbage line\nx\t200\tnan\n"
    log.write_text(before + inside)
    found = read_access_log(log, len(before), len(before) + len(inside))
    assert found == {"POST rate": [12.5, 7.5], "GET /review/": [3.0]}


def test_it_reads_each_tasks_run_time_from_the_worker_log(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    before = "Task graders.tasks.run_job[a-1] succeeded in 9.0s: None\n"
    inside = (
        "2026-11-28 03:00:00 INFO celery.app.trace Task graders.tasks.run_job[0f-2] succeeded in 0.0125s: None\n"
        "Task teams.tasks.refresh_touched_days[b-3] succeeded in 1.5s: None\n"
        "Task graders.tasks.run_job[c-4] received\n"
    )
    log.write_text(before + inside)
    found = read_task_log(log, len(before), len(before) + len(inside))
    assert found == {"graders.tasks.run_job": [12.5], "teams.tasks.refresh_touched_days": [1500.0]}


def test_it_takes_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.95), percentile(values, 1.0)) == (50.0, 95.0, 100.0)
    assert percentile([7.0], 0.95) == 7.0


def test_it_tells_a_databases_backends_from_the_servers_own_processes() -> None:
    """Only processes titled as this database's backends are its; nothing else on the machine matches."""
    assert postgres_processes("quizsite_load_no_such_database")() == []


@pytest.mark.slow
@pytest.mark.integration
def test_it_prints_where_the_time_goes_after_the_latency_table() -> None:
    url = os.getenv("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    try:
        redis.Redis.from_url(url, socket_timeout=2).ping()
    except redis.RedisError as exc:
        pytest.skip(f"no Redis at {url}: {exc}")
    command = [sys.executable, "bench/load.py", "--users", "3", "--seconds", "3", "--warmup", "3", "--think", "0.5"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "PYTEST", "DJANGO_"))}
    done = subprocess.run(
        [*command, "--redis-url", url], cwd=REPO, env=env, capture_output=True, text=True, timeout=150
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    latency, cpu, server = (out.index(h) for h in ("| endpoint | requests |", "where the CPU went", "server time ("))
    assert latency < cpu < server
    rows = {m.group(1): float(m.group(2)) for m in re.finditer(r"^\| ([^|]+?) \| \d* \| ([\d.]+) \|", out, re.M)}
    for group in ("gunicorn (master + workers)", "Celery worker (+ sandbox pool)", "Celery beat"):
        assert group in rows, out
    assert rows["gunicorn (master + workers)"] > 0  # it served requests: its CPU moved
    assert rows["**machine, all processes** (/proc/stat)"] >= rows["**all the groups above**"]
    assert re.search(r"the machine, second by second: busy p50 \d+%, p95 \d+%; \d+ of [1-9]\d* samples", out), out
    # Beat's teams refresh ticks every second, so the worker ran at least one in the window.
    tasks = out[out.index("the worker's tasks") :]
    assert re.search(r"^\| teams\.tasks\.refresh_touched_days \| [1-9]\d* \|", tasks, re.M), out
    rate = re.search(r"^\| POST rate \| (\d+) \| ([\d.]+) \| [\d.]+ \| ([\d.]+) \| \d+ \| \d+ \| (\d+) \|", out, re.M)
    assert rate, out
    assert int(rate.group(1)) > 0
    # A request's server time is inside its client latency (the client's mean is rounded to a ms).
    assert float(rate.group(3)) <= int(rate.group(4)) + 1
