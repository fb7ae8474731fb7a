"""The sandbox's public data types (no torch import, so the web process may import them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from graders.jobs.status import RUN_STATUSES

STATUSES = tuple(status.value for status in RUN_STATUSES)  # what a run ends in (graders.jobs.status)


@dataclass(frozen=True)
class Limits:
    cpu_seconds: float = 2.0  # RLIMIT_CPU in the child (whole seconds, rounded up) + accounting
    wall_seconds: float = 5.0  # the zygote kills the runner (and its PID namespace) at this
    memory_mb: int = 1024  # RLIMIT_AS of the child (CPU); torch needs >= 768 MiB to run
    output_bytes: int = 64_000  # captured print output cap
    max_source_bytes: int = 20_000


@dataclass(frozen=True)
class CaseResult:
    ok: bool  # the entry point returned normally
    value: object | None  # plain tensors / scalars / containers, rebuilt in the parent by wire.unpack
    error: str | None  # "ExcType: message" plus the learner's own traceback lines
    behaviour: dict[str, object] | None = None  # what the call did besides returning (graders.sandbox.behaviour)


@dataclass(frozen=True)
class RunResult:
    status: str  # one of STATUSES
    cases: list[CaseResult] = field(default_factory=list)  # one per input case when status == "ok"
    message: str = ""  # why, for a non-ok status
    stdout: str = ""  # captured prints, capped
    cpu_ms: float = 0.0
    wall_ms: float = 0.0
    device: str = "cpu"  # the device that actually ran the code
    memory_mb: float = 0.0  # the runner's peak resident memory (torch included); 0 where unknown
    # The hidden phase (``run(..., hidden=...)``): one result per hidden case when hidden_status is "ok"; its
    # status otherwise ("" when no hidden phase ran). Nothing else of that phase leaves the pool.
    hidden: list[CaseResult] = field(default_factory=list)
    hidden_status: str = ""
