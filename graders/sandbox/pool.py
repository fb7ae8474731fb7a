"""Layer 3 from the parent's side: a warm pool of single-use children forked from a zygote.

The zygote is a fresh interpreter started with a cleared environment (no SECRET_KEY, no database URL), so
no child's memory ever held a secret or a reference answer: the parent sends inputs only.  A background
thread keeps ``size`` children warm (torch imported, warmed up, jailed, waiting for one job).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import marshal
import math
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from graders.sandbox import jail, wire
from graders.sandbox.results import STATUSES, CaseResult, Limits, RunResult

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOOT = "import sys; sys.path.insert(0, sys.argv[2]); from graders.sandbox.zygote import main; main(int(sys.argv[1]))"
SPAWN_TIMEOUT = 120.0  # first child waits for the zygote to import torch
RESULT_GRACE = 1.0  # seconds past the wall limit before the parent gives up on the zygote
CHILD_STATUSES = frozenset(STATUSES) - {"time_limit", "internal_error"}
MAX_RESULT_BYTES = 64 * 1024 * 1024  # a bigger result is refused (the child is killed with its namespace)


class SandboxError(RuntimeError):
    """Infrastructure failure (zygote gone, child never ready): an internal_error, never the learner's."""


@dataclass(frozen=True)
class _Job:
    """One run as the pool sends it: the source (for tracebacks), its compiled code and the cases."""

    code: str
    compiled: bytes
    entry_point: str
    cases: list[tuple[Any, ...]]
    limits: Limits
    grad: bool
    silent_cases: tuple[int, ...]


class _Child:
    """One warm child: the job socket to the runner and the control socket to its warden (the zygote)."""

    def __init__(self, job: socket.socket, ctl: socket.socket, zygote: subprocess.Popen[bytes] | None) -> None:
        self.job = job
        self.ctl = ctl
        self.zygote = zygote
        self.ready: dict[str, Any] = {}

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        started = _recv(self.ctl, deadline, 1 << 16)
        if started is None or started[0].get("kind") != "started":
            raise SandboxError("the sandbox child did not start")
        ready = _recv(self.job, deadline, 1 << 16)
        if ready is None or ready[0].get("kind") != "ready":
            raise SandboxError("the sandbox child did not become ready")
        self.ready = ready[0]
        if self.ready.get("warm_error"):
            sys.stderr.write(f"sandbox child warm-up failed: {self.ready['warm_error']}\n")

    def alive(self) -> bool:
        """A warm child has nothing to say; anything readable (EOF included) means it died.

        A child whose zygote has exited counts as dead at once: it has no warden to enforce its wall
        limit, and it dies with the zygote's PID namespace a few milliseconds later anyway.
        """
        if self.orphaned():
            return False
        try:
            readable, _, _ = select.select([self.job, self.ctl], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def orphaned(self) -> bool:
        return self.zygote is not None and self.zygote.poll() is not None

    def close(self) -> None:
        for s in (self.job, self.ctl):
            try:
                s.close()
            except OSError:
                pass


def _recv(sock: socket.socket, deadline: float, max_bytes: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """One message before the deadline, or None (timeout, EOF, garbage)."""
    try:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        return wire.unpack(wire.recv_message(sock, max_bytes))
    except (OSError, EOFError, wire.WireError, ValueError):
        return None


class SandboxPool:
    """Runs submissions, each in a fresh jailed process taken from a warm pool."""

    def __init__(
        self,
        size: int = 2,
        device: str = "cpu",
        limits: Limits = Limits(),  # noqa: B008 - frozen dataclass
        *,
        refill: bool = True,
        gpu_memory_fraction: float = 0.25,
    ) -> None:
        self.size = max(1, size)
        self.device = device
        self.limits = limits
        self.gpu_memory_fraction = gpu_memory_fraction
        self._refill = refill
        self._base = tempfile.mkdtemp(prefix="quizsite-sandbox-")
        self._cond = threading.Condition()
        self._ready: collections.deque[_Child] = collections.deque()
        self._spawned = 0
        self._packed: collections.deque[tuple[list[tuple[Any, ...]], bytes]] = collections.deque(maxlen=16)
        self._running = 0  # jobs in flight: a refill waits for them while a warm child is left
        self._closed = False
        self._failure: str | None = None
        self._last_ready: dict[str, Any] = {}
        self._zlock = threading.Lock()
        self._zygote: subprocess.Popen[bytes] | None = None
        self._zsock: socket.socket | None = None
        self._thread = threading.Thread(target=self._keep_warm, name="sandbox-pool", daemon=True)
        self._thread.start()

    # -- public API ------------------------------------------------------------------------------------

    def run(
        self,
        code: str,
        entry_point: str,
        cases: list[tuple[Any, ...]],
        *,
        limits: Limits | None = None,
        grad: bool = False,
        timeout: float | None = None,
        silent_cases: Sequence[int] = (),
    ) -> RunResult:
        """Run ``code``'s ``entry_point`` on each case. What the cases at ``silent_cases`` print (hidden
        tests) is counted against the output limit but never leaves the child."""
        from graders.sandbox import policy  # not at import time: the web process imports this module

        limits = limits or self.limits
        started = time.monotonic()
        try:  # layer 1 here, where Python is warm: in a fresh child it cost 8x as much (1.7 ms)
            compiled = marshal.dumps(policy.compile_submission(code, limits.max_source_bytes))
        except policy.Rejected as exc:
            return RunResult(status="rejected", message=str(exc), device=self._device_name(), wall_ms=_ms(started))
        with self.busy():
            for _attempt in range(2):
                try:
                    child = self._take(SPAWN_TIMEOUT if timeout is None else timeout)
                except SandboxError as exc:
                    return RunResult(status="internal_error", message=str(exc), wall_ms=_ms(started))
                try:
                    job = _Job(code, compiled, entry_point, cases, limits, grad, tuple(silent_cases))
                    result = self._run_in(child, job, started)
                finally:
                    child.close()
                # Only a zygote that died under the job (a crash, an operator's kill) earns a second run:
                # the learner's code never got its own, and the next child comes from a new zygote.
                if result.status != "internal_error" or not child.orphaned():
                    break
            return result

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Hold the background refill back while this runs, as long as a warm child is left.

        Every ``run`` holds it for its job; a caller can hold it around more (the worker does, until
        the verdict is stored).
        """
        with self._cond:
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            children = list(self._ready)
            self._ready.clear()
            self._cond.notify_all()
        for child in children:
            child.close()
        self._stop_zygote()
        shutil.rmtree(self._base, ignore_errors=True)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def isolation(self) -> dict[str, Any]:
        """What the newest child reported about its jail (userns, netns, pidns, chroot, seccomp, device)."""
        return dict(self._last_ready)

    def warm(self, timeout: float = SPAWN_TIMEOUT) -> None:
        """Block until at least one child is ready (tests and benchmarks use it to exclude start-up)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._ready and not self._closed and time.monotonic() < deadline:
                self._cond.wait(0.1)

    # -- one job -------------------------------------------------------------------------------------

    def _run_in(self, child: _Child, run: _Job, started: float) -> RunResult:
        code, compiled, entry_point, cases, limits, grad = (
            run.code,
            run.compiled,
            run.entry_point,
            run.cases,
            run.limits,
            run.grad,
        )
        header = {
            "kind": "job",
            "code": code,
            "entry_point": entry_point,
            "grad": grad,
            "silent_cases": list(run.silent_cases),
            "cpu_seconds": limits.cpu_seconds,
            "memory_mb": limits.memory_mb,
            "output_bytes": limits.output_bytes,
            "max_source_bytes": limits.max_source_bytes,
        }
        try:
            job = wire.pack(header)
            packed_cases = self._packed_cases(cases)
        except wire.WireError as exc:
            return RunResult(status="internal_error", message=f"the cases cannot be sent: {exc}")
        try:
            wire.send_message(child.ctl, wire.pack({"kind": "arm", "wall": limits.wall_seconds}))
            child.job.settimeout(limits.wall_seconds + RESULT_GRACE)
            wire.send_message(child.job, job)
            wire.send_message(child.job, compiled)
            wire.send_message(child.job, packed_cases)
        except OSError as exc:
            return RunResult(status="internal_error", message=f"the sandbox child went away: {exc}")
        # Counted from the job's start, not from ``started``: waiting for a warm child (slow on a
        # loaded machine) must not eat into the time the child is given to answer.
        deadline = time.monotonic() + limits.wall_seconds + RESULT_GRACE
        try:
            child.job.settimeout(max(deadline - time.monotonic(), 0.001))
            result: tuple[dict[str, Any], dict[str, Any]] | None = wire.unpack(
                wire.recv_message(child.job, MAX_RESULT_BYTES)
            )
        except wire.WireError as exc:
            status = "output_limit" if "limit" in str(exc) else "runtime_error"
            message = f"the sandbox returned an unusable result: {exc}"
            return RunResult(status=status, message=message, wall_ms=_ms(started), device=self._device_name())
        except (OSError, EOFError, ValueError):
            result = None
        report = None
        if result is None:  # only then does the warden's account matter (killed, died, timed out)
            got = _recv(child.ctl, max(deadline, time.monotonic() + RESULT_GRACE), 1 << 16)
            report = got[0] if got else None
        return _verdict(result, report, len(cases), limits, child, started)

    def _packed_cases(self, cases: list[tuple[Any, ...]]) -> bytes:
        """The cases encoded once per list object: a drill's cases are the same for every learner.

        ``graders.grading`` hands the same cached list for every submission of a (drill version, seed),
        and never changes it; the entry keeps the list alive, so its identity cannot be reused.
        """
        with self._cond:
            for held, data in self._packed:
                if held is cases:
                    return data
        data = wire.pack({"kind": "cases"}, {"cases": [tuple(c) for c in cases]})
        with self._cond:
            self._packed.appendleft((cases, data))
        return data

    # -- keeping children warm --------------------------------------------------------------------------

    def _take(self, timeout: float) -> _Child:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._ready:
                if self._closed:
                    raise SandboxError("the sandbox pool is closed")
                if self._failure and not self._refill:
                    raise SandboxError(self._failure)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SandboxError(self._failure or "no sandbox child became ready in time")
                self._cond.wait(min(remaining, 0.5))
            child = self._ready.popleft()
            self._cond.notify_all()
        if not child.alive():  # e.g. the zygote was killed and took its runners along
            child.close()
            return self._take(max(deadline - time.monotonic(), 0.001))
        return child

    def _keep_warm(self) -> None:
        """Background thread: ask for every missing child at once (their set-up overlaps), then collect.

        While a job runs and a warm child is left, the refill waits: forking a child costs milliseconds
        of CPU, and on a small machine it would take them from the job being graded.
        """
        failures = 0
        while True:
            with self._cond:
                while not self._closed and (self._missing() == 0 or self._running and self._ready):
                    self._cond.wait()
                if self._closed:
                    return
                missing = self._missing()
            pending: list[_Child] = []
            try:
                for _ in range(missing):
                    pending.append(self._request_child())
                for child in list(pending):
                    child.wait_ready(SPAWN_TIMEOUT)
                    pending.remove(child)
                    self._add_ready(child)
                failures = 0
            except (SandboxError, OSError) as exc:
                for child in pending:
                    child.close()
                failures += 1
                with self._cond:
                    self._failure = f"the sandbox could not start a child: {exc}"
                    self._cond.notify_all()
                self._stop_zygote()
                if not self._refill:
                    return
                time.sleep(min(0.1 * 2**failures, 5.0))

    def _missing(self) -> int:
        if not self._refill:
            return max(0, self.size - self._spawned)
        return max(0, self.size - len(self._ready))

    def _add_ready(self, child: _Child) -> None:
        with self._cond:
            if self._closed:
                child.close()
                return
            self._ready.append(child)
            self._last_ready = {k: v for k, v in child.ready.items() if k not in ("kind", "timings")}
            self._cond.notify_all()

    def _request_child(self) -> _Child:
        """Send one spawn request to the zygote; the child says "started" and then "ready" on its sockets."""
        zsock, zygote = self._ensure_zygote()
        job_p, job_c = socket.socketpair()
        ctl_p, ctl_c = socket.socketpair()
        self._spawned += 1
        config = {
            "device": self.device,
            "workdir": os.path.join(self._base, f"c{self._spawned}"),
            "gpu_memory_fraction": self.gpu_memory_fraction,
        }
        try:
            with self._zlock:
                socket.send_fds(zsock, [json.dumps(config).encode()], [job_c.fileno(), ctl_c.fileno()])
        except OSError:
            job_p.close()
            ctl_p.close()
            raise
        finally:
            job_c.close()
            ctl_c.close()
        return _Child(job_p, ctl_p, zygote)

    def _spawn(self) -> _Child:
        """One child, synchronously (tests and diagnostics)."""
        child = self._request_child()
        try:
            child.wait_ready(SPAWN_TIMEOUT)
        except SandboxError:
            child.close()
            raise
        return child

    def _ensure_zygote(self) -> tuple[socket.socket, subprocess.Popen[bytes]]:
        """The live zygote's socket and process, starting a new zygote if the last one died."""
        with self._zlock:
            if self._zygote is not None and self._zygote.poll() is None and self._zsock is not None:
                return self._zsock, self._zygote
            if self._zsock is not None:  # the previous zygote died
                self._zsock.close()
            if self._zygote is not None:
                self._zygote.wait()
            parent_end, zygote_end = socket.socketpair()
            self._zygote = subprocess.Popen(
                [sys.executable, "-I", "-c", BOOT, str(zygote_end.fileno()), PROJECT_ROOT],
                pass_fds=[zygote_end.fileno()],
                env=dict(jail.CLEAN_ENV),
                cwd=self._base,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
            zygote_end.close()
            self._zsock = parent_end
            return parent_end, self._zygote

    def _stop_zygote(self) -> None:
        with self._zlock:
            if self._zsock is not None:
                self._zsock.close()
                self._zsock = None
            if self._zygote is not None:
                try:
                    self._zygote.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self._zygote.send_signal(signal.SIGKILL)
                    self._zygote.wait()
                self._zygote = None

    def _device_name(self) -> str:
        return str(self._last_ready.get("device", "cpu"))


def _verdict(
    result: tuple[dict[str, Any], dict[str, Any]] | None,
    report: dict[str, Any] | None,
    n_cases: int,
    limits: Limits,
    child: _Child,
    started: float,
) -> RunResult:
    """Turn the runner's message and the warden's report into a RunResult; trust only plain data."""
    wall_ms = _ms(started)
    source = report if report else (result[0] if result else {})
    try:
        cpu_ms = float(source.get("cpu_ms", 0.0))
    except (TypeError, ValueError, OverflowError):
        cpu_ms = 0.0
    if not math.isfinite(cpu_ms) or cpu_ms < 0:  # a forged figure is ignored, never passed on (NaN is not JSON)
        cpu_ms = 0.0
    device = str(child.ready.get("device", "cpu"))
    common = {"cpu_ms": cpu_ms, "wall_ms": wall_ms, "device": device if device in ("cpu", "cuda") else "cpu"}
    if report and report.get("wall_killed"):
        return RunResult(
            status="time_limit", message=f"time limit: over {limits.wall_seconds:g} s of wall time", **common
        )
    if result is None:
        return _died(report, limits, common)
    header, values = result
    status = header.get("status")
    stdout = str(header.get("stdout", ""))[: limits.output_bytes]
    message = str(header.get("message", ""))[:5000]
    if status not in CHILD_STATUSES:
        return RunResult(status="runtime_error", message="the sandbox returned an unreadable result", **common)
    if status != "ok":
        return RunResult(status=status, message=message, stdout=stdout, **common)
    raw_cases = header.get("cases")
    if not isinstance(raw_cases, list) or len(raw_cases) != n_cases:
        return RunResult(status="runtime_error", message="the sandbox returned an unreadable result", **common)
    cases = []
    for index, raw in enumerate(raw_cases):
        ok = isinstance(raw, dict) and raw.get("ok") is True and str(index) in values
        error = None if ok else str(raw.get("error") if isinstance(raw, dict) else "malformed")[:5000]
        cases.append(CaseResult(ok=ok, value=values.get(str(index)) if ok else None, error=error))
    return RunResult(status="ok", cases=cases, message="", stdout=stdout, **common)


def _died(report: dict[str, Any] | None, limits: Limits, common: dict[str, Any]) -> RunResult:
    if report is None:
        return RunResult(status="internal_error", message="the sandbox child vanished without a report", **common)
    code = int(report.get("exit_code", 0))
    sig = -code if code < 0 else 0
    if sig in (signal.SIGXCPU, signal.SIGKILL) and common["cpu_ms"] >= limits.cpu_seconds * 1000 * 0.9:
        return RunResult(status="time_limit", message=f"time limit: over {limits.cpu_seconds:g} s of CPU", **common)
    name = signal.Signals(sig).name if sig in signal.valid_signals() else f"exit code {code}"
    return RunResult(status="runtime_error", message=f"the process died ({name}) before returning", **common)


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000.0


def run_once(
    code: str,
    entry_point: str,
    cases: list[tuple[Any, ...]],
    *,
    limits: Limits | None = None,
    grad: bool = False,
    device: str = "cpu",
    timeout: float | None = None,
    silent_cases: Sequence[int] = (),
) -> RunResult:
    """The same run in a cold process tree (fresh interpreter, torch imported for this one job)."""
    with SandboxPool(size=1, device=device, limits=limits or Limits(), refill=False) as pool:
        return pool.run(code, entry_point, cases, grad=grad, timeout=timeout, silent_cases=silent_cases)


_DEFAULT: dict[tuple[int, str], SandboxPool] = {}
_DEFAULT_LOCK = threading.Lock()


def default_pool(device: str = "cpu") -> SandboxPool:
    """The process-wide pool for this device (created on first use; a forked worker gets its own)."""
    key = (os.getpid(), device)
    with _DEFAULT_LOCK:
        pool = _DEFAULT.get(key)
        if pool is None:
            size = int(os.environ.get("SANDBOX_POOL_SIZE", "2"))
            pool = _DEFAULT[key] = SandboxPool(size=size, device=device)
        return pool


@atexit.register
def _close_defaults() -> None:
    for (pid, _device), pool in list(_DEFAULT.items()):
        if pid == os.getpid():
            pool.close()
