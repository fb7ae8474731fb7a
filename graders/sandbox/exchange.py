"""One job between the pool and a runner: the messages sent, each phase's answer read, and the
``RunResult`` made of them. Whatever the runner sends is data (it may own its process completely): a
message is decoded under the wire's bounds and reduced field by field, and when none comes the warden's
account of the runner's end decides the verdict. The pool (``graders.sandbox.pool``) keeps runners warm
and hands one to ``run_job`` per submission.
"""

from __future__ import annotations

import dataclasses
import math
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graders.sandbox import wire
from graders.sandbox.results import STATUSES, CaseResult, Limits, RunResult, checked_record

SPAWN_TIMEOUT = 120.0  # first child waits for the zygote to import torch
RESULT_GRACE = 1.0  # seconds past the wall limit before the parent gives up on the zygote
CHILD_STATUSES = frozenset(STATUSES) - {"time_limit", "internal_error"}
UNREADABLE = "the sandbox returned an unreadable result"  # the child's fault: what it sent makes no verdict
MAX_RESULT_BYTES = 64 * 1024 * 1024  # a bigger result is refused (the child is killed with its namespace)


class SandboxError(RuntimeError):
    """Infrastructure failure (zygote gone, child never ready): an internal_error, never the learner's."""


@dataclass(frozen=True)
class Job:
    """One run as the pool sends it: the source (for tracebacks), its compiled code and the cases."""

    code: str
    compiled: bytes
    entry_point: str
    cases: list[tuple[Any, ...]]
    limits: Limits
    grad: bool
    hidden: list[tuple[Any, ...]]  # sent only after the visible phase's result came back (``zygote._run``)
    count_graph: bool = False
    count_steps: bool = False  # each record counts the lines of the learner's code run (a drill with a time budget)
    reference: bool = False
    background: bool = False  # nobody waits for it: its runner yields the CPU to the learners' (nice 19)
    go_on: Callable[[RunResult], bool] | None = None  # asked with the visible phase's result: send the hidden?
    make_cases: bool = False  # the cases are a drill's case specs, evaluated by ``casemaker`` (no code runs)
    measure_cpu: bool = False  # wait for the warden's account of the runner's CPU time (``RunResult.runner_cpu_ms``)
    called_once: int = 0  # the last visible cases called once, no repeat (a twin pair: ``graders.drills.cases``)


class Child:
    """One warm child: the job socket to the runner and the control socket to its warden (the zygote)."""

    def __init__(self, job: socket.socket, ctl: socket.socket, zygote: subprocess.Popen[bytes] | None) -> None:
        self.job = job
        self.ctl = ctl
        self.zygote = zygote
        self.ready: dict[str, Any] = {}
        self.started = False
        self.requested_at = time.monotonic()
        self.deadline = self.requested_at + SPAWN_TIMEOUT

    def awaited(self) -> socket.socket:
        """The socket its next handshake message comes on: "started" from the warden, then "ready"."""
        return self.job if self.started else self.ctl

    def advance(self) -> bool:
        """Read the message that arrived (its socket is readable); True once the child is ready."""
        deadline = time.monotonic() + 5.0  # the message is there or the peer is gone: no real wait
        if not self.started:
            started = recv(self.ctl, deadline, 1 << 16)
            if started is None or started[0].get("kind") != "started":
                raise SandboxError("the sandbox child did not start")
            self.started = True
            return False
        ready = recv(self.job, deadline, 1 << 16)
        if ready is None or ready[0].get("kind") != "ready":
            raise SandboxError("the sandbox child did not become ready")
        self._accept(ready[0])
        return True

    def _accept(self, ready: dict[str, Any]) -> None:
        self.ready = ready
        if ready.get("warm_error"):
            sys.stderr.write(f"sandbox child warm-up failed: {ready['warm_error']}\n")

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        started = recv(self.ctl, deadline, 1 << 16)
        if started is None or started[0].get("kind") != "started":
            raise SandboxError("the sandbox child did not start")
        ready = recv(self.job, deadline, 1 << 16)
        if ready is None or ready[0].get("kind") != "ready":
            raise SandboxError("the sandbox child did not become ready")
        self.started = True
        self._accept(ready[0])

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


def recv(sock: socket.socket, deadline: float, max_bytes: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """One message before the deadline, or None (timeout, EOF, garbage)."""
    try:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        return wire.unpack(wire.recv_message(sock, max_bytes))
    except (OSError, EOFError, wire.WireError, ValueError):
        return None


def run_job(
    child: Child, run: Job, started: float, pack: Callable[[list[tuple[Any, ...]]], bytes], device: str
) -> RunResult:
    """Send the job and the visible cases, read that phase's result; then, if there are hidden cases and the
    visible phase ended ``ok``, send them and read the hidden phase's (see ``zygote._run``)."""
    limits = run.limits
    header = {
        "kind": "job",
        "code": run.code,
        "entry_point": run.entry_point,
        "grad": run.grad,
        "hidden": bool(run.hidden),
        "count_graph": run.count_graph,
        "count_steps": run.count_steps,
        "called_once": run.called_once,
        "reference": run.reference,
        "background": run.background,
        "make_cases": run.make_cases,
        "cpu_seconds": limits.cpu_seconds,
        "memory_mb": limits.memory_mb,
        "output_bytes": limits.output_bytes,
        "max_source_bytes": limits.max_source_bytes,
    }
    try:
        job = wire.pack(header)
        packed_cases = pack(run.cases)
    except wire.WireError as exc:
        return RunResult(status="internal_error", message=f"the cases cannot be sent: {exc}")
    try:
        arm = {"kind": "arm", "wall": limits.wall_seconds, "cpu": limits.cpu_seconds}  # the warden's limits
        wire.send_message(child.ctl, wire.pack(arm))
        child.job.settimeout(limits.wall_seconds + RESULT_GRACE)
        wire.send_message(child.job, job)
        wire.send_message(child.job, run.compiled)
        wire.send_message(child.job, packed_cases)
    except OSError as exc:
        return RunResult(status="internal_error", message=f"the sandbox child went away: {exc}")
    # Counted from the job's start, not from ``started``: waiting for a warm child (slow on a
    # loaded machine) must not eat into the time the child is given to answer.
    deadline = time.monotonic() + limits.wall_seconds + RESULT_GRACE
    try:  # while the child runs the visible phase; they stay here until it passed
        packed_hidden = pack(run.hidden) if run.hidden else b""
        unsendable = ""
    except wire.WireError as exc:
        packed_hidden, unsendable = b"", f"the hidden cases cannot be sent: {exc}"
    visible = _phase(child, deadline, len(run.cases), limits, started, device)
    if not run.hidden:
        return _measured(child, run, visible, deadline)
    if visible.status != "ok" or (run.go_on is not None and not run.go_on(visible)):
        return visible  # the hidden cases never left this process
    if unsendable:
        return RunResult(status="internal_error", message=unsendable)
    try:
        wire.send_message(child.job, packed_hidden)
    except OSError:
        pass  # the child went away after its visible phase: the hidden phase reads the warden's account
    hidden = _phase(child, deadline, len(run.hidden), limits, started, device)
    # Of the hidden phase only its status and each case's value, ok flag and behaviour record are kept:
    # what the child printed, its messages, errors and timings are dropped here, unread.
    cases = [dataclasses.replace(case, error=None) for case in hidden.cases]
    return _measured(child, run, dataclasses.replace(visible, hidden=cases, hidden_status=hidden.status), deadline)


def _measured(child: Child, run: Job, result: RunResult, deadline: float) -> RunResult:
    """With ``measure_cpu``, the result with the runner's CPU time as its warden measured it.

    The runner exits after its last phase and the warden reports the CPU time the kernel counted for it
    (``wait4``, every thread) since the job was armed, its set-up left out: a figure the runner cannot
    forge, unlike the ``cpu_us`` of its behaviour records (``graders.drills.contract.judge_run_time``). A
    runner that does not exit is killed at its wall limit and reported then; no report at all leaves
    ``runner_cpu_ms`` None, which the judge reads as unmeasured, never as cheap.
    """
    if not run.measure_cpu or result.status != "ok" or result.hidden_status not in ("", "ok"):
        return result
    report = recv(child.ctl, max(deadline, time.monotonic() + RESULT_GRACE), 1 << 16)
    header = report[0] if report else {}
    if header.get("kind") != "exit":
        return result
    spent = header.get("job_cpu_ms") if header.get("job_cpu_ms") is not None else header.get("cpu_ms")
    if type(spent) is not float or not math.isfinite(spent) or spent < 0:
        return result
    return dataclasses.replace(result, runner_cpu_ms=spent)


def _phase(child: Child, deadline: float, n_cases: int, limits: Limits, started: float, device: str) -> RunResult:
    """One phase's message (or, when none comes, the warden's account of the child's end) as a result."""
    try:
        child.job.settimeout(max(deadline - time.monotonic(), 0.001))
        result: tuple[dict[str, Any], dict[str, Any]] | None = wire.unpack(
            wire.recv_message(child.job, MAX_RESULT_BYTES)
        )
    except wire.WireError as exc:
        status = "output_limit" if "limit" in str(exc) else "runtime_error"
        message = f"the sandbox returned an unusable result: {exc}"
        return RunResult(status=status, message=message, wall_ms=elapsed_ms(started), device=device)
    except (OSError, EOFError, ValueError):
        result = None
    report = None
    if result is None:  # only then does the warden's account matter (killed, died, timed out)
        got = recv(child.ctl, max(deadline, time.monotonic() + RESULT_GRACE), 1 << 16)
        report = got[0] if got else None
    try:
        return _verdict(result, report, n_cases, limits, child, started)
    except Exception as exc:  # noqa: BLE001 - what the child sent is data; none of it may crash the parent
        sys.stderr.write(f"sandbox: a result could not be interpreted ({type(exc).__name__}: {exc})\n")
        return RunResult(status="runtime_error", message=UNREADABLE, wall_ms=elapsed_ms(started), device=device)


def _verdict(
    result: tuple[dict[str, Any], dict[str, Any]] | None,
    report: dict[str, Any] | None,
    n_cases: int,
    limits: Limits,
    child: Child,
    started: float,
) -> RunResult:
    """Turn the runner's message and the warden's report into a RunResult; trust only plain data."""
    wall_ms = elapsed_ms(started)
    source = report if report else (result[0] if result else {})
    try:
        cpu_ms = float(source.get("cpu_ms", 0.0))
    except (TypeError, ValueError, OverflowError):
        cpu_ms = 0.0
    if not math.isfinite(cpu_ms) or cpu_ms < 0:  # a forged figure is ignored, never passed on (NaN is not JSON)
        cpu_ms = 0.0
    device = str(child.ready.get("device", "cpu"))
    device = device if device in ("cpu", "cuda") else "cpu"
    common: dict[str, Any] = {"cpu_ms": cpu_ms, "wall_ms": wall_ms, "device": device}
    if report and report.get("wall_killed"):
        return RunResult(
            status="time_limit", message=f"time limit: over {limits.wall_seconds:g} s of wall time", **common
        )
    if result is None:
        return _died(report, limits, common)
    header, values = result
    common["memory_mb"] = _memory_mb(header.get("max_rss_kb"))
    status = header.get("status")
    stdout = str(header.get("stdout", ""))[: limits.output_bytes]
    message = str(header.get("message", ""))[:5000]
    if not isinstance(status, str) or status not in CHILD_STATUSES:
        return RunResult(status="runtime_error", message=UNREADABLE, **common)
    if status != "ok":
        return RunResult(status=status, message=message, stdout=stdout, **common)
    raw_cases = header.get("cases")
    if not isinstance(raw_cases, list) or len(raw_cases) != n_cases:
        return RunResult(status="runtime_error", message=UNREADABLE, **common)
    cases = []
    for index, raw in enumerate(raw_cases):
        ok = isinstance(raw, dict) and raw.get("ok") is True and str(index) in values
        error = None if ok else str(raw.get("error") if isinstance(raw, dict) else "malformed")[:5000]
        record = raw.get("behaviour") if ok and isinstance(raw, dict) else None
        behaviour = checked_record(record)  # small plain data with every number in range, judged field by field
        if record is not None and behaviour is None:  # no honest runner sends it: the runner's fault
            return RunResult(status="runtime_error", message=UNREADABLE, **common)
        cases.append(CaseResult(ok=ok, value=values.get(str(index)) if ok else None, error=error, behaviour=behaviour))
    return RunResult(status="ok", cases=cases, message="", stdout=stdout, **common)


def _memory_mb(kilobytes: object) -> float:
    """A child's reported peak memory, kept only when it is a plausible number (it is the child's word)."""
    if type(kilobytes) is not int or not 0 < kilobytes < 1 << 40:
        return 0.0
    return round(kilobytes / 1024, 1)


def _died(report: dict[str, Any] | None, limits: Limits, common: dict[str, Any]) -> RunResult:
    if report is None:
        return RunResult(status="internal_error", message="the sandbox child vanished without a report", **common)
    code = int(report.get("exit_code", 0))
    sig = -code if code < 0 else 0
    if sig in (signal.SIGXCPU, signal.SIGKILL) and common["cpu_ms"] >= limits.cpu_seconds * 1000 * 0.9:
        return RunResult(status="time_limit", message=f"time limit: over {limits.cpu_seconds:g} s of CPU", **common)
    name = signal.Signals(sig).name if sig in signal.valid_signals() else f"exit code {code}"
    return RunResult(status="runtime_error", message=f"the process died ({name}) before returning", **common)


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (``time.monotonic()``)."""
    return (time.monotonic() - started) * 1000.0
