"""`make run`'s stack started from Python: scripts/run.sh on a free port, in a var folder of its own.

Why: bench/soak.py and tests/test_run_stack.py must drive the exact processes `make run` starts, so this
starts run.sh itself (not a copy of its command lines), asks the supervisord it runs which program has
which pid (XML-RPC on supervisord's Unix socket), and after a stop lists every process of the stack
still alive: run.sh's descendants as seen just before the stop, plus any process whose environment
carries this stack's marker (a process that left the tree, for example by daemonizing, keeps it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
import xmlrpc.client
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from supervisor.xmlrpc import SupervisorTransport

REPO = Path(__file__).resolve().parents[1]
MARKER = "QUIZSITE_RUN_STACK"
# Variables of the calling process that must not leak into the stack (pytest's, and the brokers and
# databases of whoever runs this, unless given explicitly).
DROPPED = ("PYTEST", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "TEST_", "CELERY_KEY_PREFIX", "COV_")
# How a person stops `make run`: Ctrl+C in its terminal (SIGINT to the foreground process group),
# SIGTERM to the process group, or SIGTERM to the main process alone.
STOPS = {
    "ctrl-c": (True, signal.SIGINT),
    "term-group": (True, signal.SIGTERM),
    "term-main": (False, signal.SIGTERM),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RunStack:
    """One `scripts/run.sh HOST PORT`, in its own session, logging to ``root/run.log``."""

    env_overrides: dict[str, str] = field(default_factory=dict)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="qs-run-")))
    port: int = field(default_factory=free_port)
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def var(self) -> Path:
        return self.root / "var"

    @property
    def log(self) -> Path:
        return self.root / "run.log"

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
        env.update({"QUIZSITE_VAR_DIR": str(self.var), MARKER: self.marker, "DEBUG": "1"})
        env.update(self.env_overrides)
        return env

    def start(self, timeout: float = 300) -> RunStack:
        """Start run.sh and wait until the site answers and a worker answers the health check's ping."""
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                ["bash", "scripts/run.sh", "127.0.0.1", str(self.port)],
                cwd=REPO,
                env=self.environment(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not (self.healthy() and self.settled()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"make run's stack did not become healthy:\n{self.tail()}")
            time.sleep(0.5)
        return self

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=5) as response:
                return response.status == 200
        except (OSError, urllib.error.HTTPError):
            return False

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def supervisor(self, method: str, *args: Any) -> Any:
        """Call supervisord's XML-RPC interface (what supervisorctl talks to), e.g. ``getProcessInfo``."""
        transport = SupervisorTransport(None, None, f"unix://{self.var / 'run' / 'supervisor.sock'}")
        try:
            proxy = xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport)
            return getattr(proxy.supervisor, method)(*args)
        finally:
            transport.close()

    def program(self, name: str) -> dict[str, Any]:
        """``{"pid", "statename", "start", ...}`` of one program, as supervisord reports it."""
        return dict(self.supervisor("getProcessInfo", name))

    def settled(self) -> bool:
        """Every program run.sh started is RUNNING (supervisord says so after its startsecs)."""
        try:
            states = {info["name"]: info["statename"] for info in self.supervisor("getAllProcessInfo")}
        except (OSError, xmlrpc.client.Error):
            return False
        return all(state == "RUNNING" for name, state in states.items() if name != "broker" or state != "STOPPED")

    def processes(self) -> dict[int, Seen]:
        """Run.sh, its descendants and every process carrying the marker, by pid."""
        found: list[psutil.Process] = []
        if self.process is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                main = psutil.Process(self.process.pid)
                found += [main, *main.children(recursive=True)]
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if proc.environ().get(MARKER) == self.marker:
                    found.append(proc)
        seen = {}
        for proc in found:
            with contextlib.suppress(psutil.Error):
                seen[proc.pid] = Seen(proc.pid, proc.create_time(), " ".join(proc.cmdline())[:200])
        return seen

    def stop(self, how: str = "term-main", timeout: float = 30) -> tuple[float, list[Seen]]:
        """Stop the stack as a person would; returns the seconds it took and what was still alive then."""
        to_group, signum = STOPS[how]
        assert self.process is not None
        seen = self.processes()
        started = time.monotonic()
        if to_group:
            os.killpg(self.process.pid, signum)
        else:
            self.process.send_signal(signum)
        left = list(seen.values())
        while left and time.monotonic() < started + timeout:
            time.sleep(0.2)
            self.process.poll()  # reap run.sh itself
            seen |= self.processes()  # anything started during the stop counts too
            left = [proc for proc in seen.values() if proc.alive()]
        return time.monotonic() - started, left

    def destroy(self) -> None:
        """Last resort after a test: SIGKILL whatever of the stack is left, then remove its folder."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
        if os.getenv("KEEP_RUN_STACK") != "1":
            shutil.rmtree(self.root, ignore_errors=True)


@dataclass(frozen=True)
class Seen:
    """A process as seen once: its creation time tells it apart from a later process given the same pid."""

    pid: int
    created: float
    command: str

    def alive(self) -> bool:
        """Still running (a zombie has finished: its parent just has not reaped it yet)."""
        try:
            proc = psutil.Process(self.pid)
            return proc.create_time() == self.created and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
