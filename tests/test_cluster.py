"""bench/cluster.py's short form: two "hosts" in network namespaces, one of them killed mid-load.

It runs the harness as a person does (a subprocess, as root), so a namespace it forgets or a process it
leaves behind shows here. Skips with the reason where network namespaces cannot be made (not root, no
``ip``, a sandbox that forbids them) or PostgreSQL or redis-server is missing.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.cluster import missing  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.fixture(scope="module", autouse=True)
def namespaces() -> None:
    reason = missing()
    if reason:
        pytest.skip(f"bench/cluster.py cannot run here: {reason}")


def leftovers(tag: str) -> tuple[list[str], list[str]]:
    """Namespaces and processes of the run tagged ``tag`` (qz<pid>) that still exist."""
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    spaces = [line.split()[0] for line in names.splitlines() if line.startswith(f"{tag}-")]
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    processes = [line for line in ps.splitlines() if f"{tag}-" in line or "quizsite-cluster-" in line]
    return spaces, [line for line in processes if "ps -eo" not in line]


def test_it_regrades_a_killed_hosts_jobs_once_each_and_removes_everything_it_made() -> None:
    command = [sys.executable, "bench/cluster.py", "--hosts", "2", "--phases", "kill", "--device-ms", "100"]
    command += ["--stale-after", "3", "--load-s", "5", "--latency-ms", "0"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=170)
    output = done.stdout + done.stderr[-3000:]
    assert done.returncode == 0, output
    result = re.search(r"kill: Integrity\((.*)\) -> PASS", done.stdout)
    assert result, output
    assert "not_final=0" in result.group(1) and "ratings_wrong=[]" in result.group(1)
    assert "lost_jobs=0" not in result.group(1)  # the killed host held a job, and it was graded elsewhere
    tag = re.search(r"killed \d+ processes of (qz\d+)-h1", done.stdout)
    assert tag, output
    assert leftovers(tag.group(1)) == ([], [])


def test_it_cleans_up_when_stopped_with_sigterm_half_way() -> None:
    harness = subprocess.Popen(
        [sys.executable, "bench/cluster.py", "--hosts", "2", "--phases", "scale"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tag = f"qz{harness.pid}"
    deadline = time.monotonic() + 60
    while not leftovers(tag)[0] and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(3)  # mid-way through the set-up: namespaces, PostgreSQL, Redis
    assert leftovers(tag)[0], "the harness made no namespace"
    os.kill(harness.pid, signal.SIGTERM)
    harness.wait(60)
    assert leftovers(tag) == ([], [])
