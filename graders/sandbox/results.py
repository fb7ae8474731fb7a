"""The sandbox's public data types (no torch import, so the web process may import them)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from jobs.status import RUN_STATUSES

STATUSES = tuple(status.value for status in RUN_STATUSES)  # what a run ends in (jobs.status)


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
    # The runner's CPU time since its job was armed (both phases, its exit; not its set-up) as measured
    # outside it: its warden's ``wait4`` account, or the grader's own clock for an in-process runner. Only
    # for a run that asked for it (``measure_cpu``, a drill with a time budget) and ended ok; None otherwise.
    runner_cpu_ms: float | None = None


# A behaviour record (``graders.sandbox.behaviour``) is the runner's word, and a runner may own its process:
# it is read at the decode boundary (``exchange``) as small, plain data with every number one a call can
# have. Anything else makes the phase unreadable, the runner's fault and so a verdict, and whatever judges a
# record (``graders.drills.contract``) never meets an integer of 400 digits (``spent / 1000`` raised
# OverflowError in the worker), an infinity (``1e999`` in JSON), a string where a measure belongs (a budget
# that reads ``type(x) is int`` would skip it) or a deep tree.
RECORD_RANGES: dict[str, tuple[int, int]] = {
    "cpu_us": (0, 86_400 * 1_000_000),  # a day of CPU time: no job's limit comes near it
    "peak_bytes": (0, 1 << 48),  # 256 TiB
    "graph_nodes": (0, 1_000_000_000),
    "graph_kept": (0, 1_000_000_000),
    "steps": (0, 1 << 53),
}
RECORD_INT = 1 << 53  # every other integer of a record: floats hold it exactly, and no count a call makes is larger
RECORD_TEXT = 4_000  # characters in a string (a result's type signature is cut at 200, a learner's line at 120)
RECORD_ITEMS = 256  # items in a list, keys in a dict
RECORD_DEPTH = 4  # the record, its lists and dicts (``where``), and one level more


def checked_record(record: object) -> dict[str, object] | None:
    """``record`` itself when it is a record a runner could honestly send, else None (see ``RECORD_RANGES``)."""
    if not isinstance(record, dict) or not _plain(record, 1):
        return None
    for key, (low, high) in RECORD_RANGES.items():
        value = record.get(key)
        if key in record and not (type(value) is int and low <= value <= high):
            return None
    return record


def _plain(value: object, depth: int) -> bool:
    """JSON data within the record's bounds (a runner's message is JSON already: only its sizes are checked)."""
    if value is None or type(value) is bool:
        return True
    if type(value) is int:
        return -RECORD_INT <= value <= RECORD_INT
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is str:
        return len(value) <= RECORD_TEXT
    if depth >= RECORD_DEPTH or not isinstance(value, list | dict) or len(value) > RECORD_ITEMS:
        return False
    if isinstance(value, dict):
        return all(type(k) is str and len(k) <= 64 and _plain(v, depth + 1) for k, v in value.items())
    return all(_plain(item, depth + 1) for item in value)
