"""Where a load run's time goes: CPU per process group over the measured window, server vs client time.

Why: a load test that only prints client latencies says the site is slow, not why. bench/load.py
measures, for the same window as its latency table, (1) the CPU seconds each process group used (the
site's gunicorn, the Celery worker with its sandbox pool, beat, this database's PostgreSQL backends,
the shared PostgreSQL and Redis servers, the load generator itself, and the machine as a whole), so a
demand above the cores shows as a number, and (2) per endpoint the time gunicorn spent on each request
(its access log, ``%(D)s``) next to the latency the client saw, so queueing shows as the difference.

CPU is read from the kernel's counters (psutil: /proc/<pid>/stat), never estimated:
- a group of our own processes is a tree (a root and its descendants): the sum over the live
  processes of their own CPU plus their reaped children's is exact at any instant, so two snapshots
  (start, end) give the window's CPU, processes started or ended inside it included;
- shared servers (PostgreSQL, Redis) are sampled every second; a process's baseline is its value at the
  window's start, or zero when it started inside the window. A backend that exits between two samples
  loses at most a second of its CPU.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

NAME_HEADER = "X-Load-Name"  # the client's name for a request; gunicorn logs it as %({x-load-name}i)s
ACCESS_FORMAT = "%({x-load-name}i)s\t%(s)s\t%(D)s"  # name, status, request time in microseconds
# A PostgreSQL backend's title: "postgres: [cluster: ]user database host(port) state".
_BACKEND = re.compile(r"^postgres: (?:\S+: )?\S+ (\S+) (?:\S+\(\d+\)|\[local\])")

Key = tuple[int, float]  # pid and creation time: a pid reused by a later process is another process


def cpu_seconds(proc: psutil.Process, children: bool) -> float:
    times = proc.cpu_times()
    own = times.user + times.system
    return own + times.children_user + times.children_system if children else own


def tree(root: int) -> list[psutil.Process]:
    try:
        top = psutil.Process(root)
        return [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def postgres_processes(database: str | None) -> Callable[[], list[psutil.Process]]:
    """The backends of ``database`` (given), or the server's own processes (postmaster, WAL writer,
    checkpointer, autovacuum...; other databases' backends are someone else's: neither)."""

    def find() -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["name", "cmdline"]):
            cmdline = " ".join(proc.info["cmdline"] or [])
            if proc.info["name"] != "postgres" and not cmdline.startswith("postgres:"):
                continue
            backend = _BACKEND.match(cmdline)
            if (backend is None and database is None) or (backend is not None and backend.group(1) == database):
                found.append(proc)
        return found

    return find


def named(name: str) -> Callable[[], list[psutil.Process]]:
    def find() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["name"]) if p.info["name"] == name]

    return find


@dataclass
class Group:
    """One row of the CPU table: how to find its processes and how to add them up."""

    name: str
    find: Callable[[], list[psutil.Process]]
    is_tree: bool  # our own tree (children's CPU included, two snapshots) or a shared server (sampled)
    start: dict[Key, float] = field(default_factory=dict)
    last: dict[Key, float] = field(default_factory=dict)
    processes: int = 0

    def read(self) -> dict[Key, float]:
        seen = {}
        for proc in self.find():
            with contextlib.suppress(psutil.Error):
                seen[(proc.pid, proc.create_time())] = cpu_seconds(proc, children=self.is_tree)
        return seen

    def sample(self) -> None:
        seen = self.read()
        self.last.update(seen)
        self.processes = max(self.processes, len(seen))

    def used(self, window_start: float) -> float:
        """CPU seconds since the window started (the last sample must be the window's end)."""
        if self.is_tree:
            end = self.read()
            self.processes = len(end)
            return sum(end.values()) - sum(self.start.values())
        # A shared server's process: from its value at the start, or from zero if it started later.
        total = 0.0
        for key, value in self.last.items():
            if key in self.start:
                total += value - self.start[key]
            elif key[1] >= window_start:
                total += value
        return total


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy since boot (every core, every process)."""
    t = psutil.cpu_times()  # guest time is already inside user time, so it is not added again
    return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0) + getattr(t, "steal", 0.0)


@dataclass
class CpuWindow:
    """The CPU table's measurements: ``begin()`` at the window's start, ``sample()`` every second, ``end()``."""

    groups: list[Group]
    started: float = 0.0
    seconds: float = 0.0
    busy_start: float = 0.0
    machine: float = 0.0
    used: dict[str, float] = field(default_factory=dict)
    busy: list[float] = field(default_factory=list)  # the machine's busy share in each sampling interval
    _tick: tuple[float, float] = (0.0, 0.0)

    def begin(self) -> None:
        self.started, self.busy_start = time.time(), machine_busy()
        self._tick = (time.monotonic(), self.busy_start)
        for group in self.groups:
            group.start = group.read()
            group.last = dict(group.start)

    def sample(self) -> None:
        """Read the shared servers, and how busy the machine was since the last sample (a mean hides bursts)."""
        now, busy = time.monotonic(), machine_busy()
        if now - self._tick[0] >= 0.5:
            self.busy.append((busy - self._tick[1]) / ((now - self._tick[0]) * (os.cpu_count() or 1)))
            self._tick = (now, busy)
        for group in self.groups:
            if not group.is_tree:
                group.sample()

    def end(self) -> None:
        self.sample()
        self.seconds = time.time() - self.started
        self.machine = machine_busy() - self.busy_start
        self.used = {group.name: group.used(self.started) for group in self.groups}


def cpu_table(window: CpuWindow, requests: int, cores: int | None = None) -> list[str]:
    """Markdown rows: each group's CPU seconds, cores used, share of the machine, CPU ms per HTTP request."""
    cores = cores or os.cpu_count() or 1
    lines = [
        f"\nwhere the CPU went: {window.seconds:.1f} s window, {cores} cores = {window.seconds * cores:.1f} CPU s\n",
        "| process group | processes | CPU s | cores | share of the machine | CPU ms per HTTP request |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def row(name: str, seconds: float, processes: str) -> str:
        per = f"{seconds * 1000 / requests:.1f}" if requests else ""
        share = seconds / (window.seconds * cores) * 100 if window.seconds else 0.0
        cores_used = seconds / window.seconds if window.seconds else 0.0
        return f"| {name} | {processes} | {seconds:.1f} | {cores_used:.2f} | {share:.0f} % | {per} |"

    for group in window.groups:
        lines.append(row(group.name, window.used[group.name], str(group.processes)))
    ours = sum(window.used.values())
    lines.append(row("**all the groups above**", ours, ""))
    lines.append(row("everything else on the machine", max(window.machine - ours, 0.0), ""))
    lines.append(row("**machine, all processes** (/proc/stat)", window.machine, ""))
    if window.busy:
        full = sum(share >= 0.95 for share in window.busy)
        lines.append(
            f"\nthe machine, second by second: busy p50 {percentile(window.busy, 0.5):.0%}, "
            f"p95 {percentile(window.busy, 0.95):.0%}; {full} of {len(window.busy)} samples at >= 95 % busy"
        )
    return lines


@dataclass(frozen=True)
class Timing:
    name: str
    requests: int
    p50: float
    p95: float
    mean: float


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (what locust reports, without its rounding)."""
    ordered = sorted(values)
    rank = math.ceil(share * len(ordered) - 1e-9)  # 0.95 * 100 is 95.00000000000001
    return ordered[min(len(ordered), max(rank, 1)) - 1]


def timings(samples: dict[str, list[float]]) -> dict[str, Timing]:
    return {
        name: Timing(name, len(ms), percentile(ms, 0.5), percentile(ms, 0.95), statistics.fmean(ms))
        for name, ms in samples.items()
        if ms
    }


def read_access_log(path: Path, start: int, end: int) -> dict[str, list[float]]:
    """Server-side ms per request name from the access log's bytes [start, end) (the window's lines)."""
    with path.open("rb") as log:
        log.seek(start)
        text = log.read(end - start).decode(errors="replace")
    found: dict[str, list[float]] = defaultdict(list)
    for line in text.splitlines():
        parts = line.rsplit("\t", 2)
        if len(parts) == 3 and parts[2].isdigit():
            found[parts[0]].append(int(parts[2]) / 1000)
    return found


_TASK = re.compile(r"Task ([\w.]+)\[[\w-]+\] (?:succeeded|raised|retry|failed)\D*?([\d.]+)s")


def read_task_log(path: Path, start: int, end: int) -> dict[str, list[float]]:
    """Each Celery task's run time in ms ("Task name[id] succeeded in 0.012s") in the log's bytes [start, end)."""
    with path.open("rb") as log:
        log.seek(start)
        text = log.read(end - start).decode(errors="replace")
    found: dict[str, list[float]] = defaultdict(list)
    for match in _TASK.finditer(text):
        found[match.group(1)].append(float(match.group(2)) * 1000)
    return found


def task_table(tasks: dict[str, Timing], seconds: float) -> list[str]:
    """Markdown rows: what the worker's threads were busy with (a slow housekeeping task holds a grading slot)."""
    lines = [
        "\nthe worker's tasks in the window (its log)\n",
        "| task | n | p50 ms | p95 ms | mean ms | thread-seconds per second |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for t in sorted(tasks.values(), key=lambda t: -t.mean * t.requests):
        held = t.mean * t.requests / 1000 / seconds if seconds else 0.0
        lines.append(f"| {t.name} | {t.requests} | {t.p50:.0f} | {t.p95:.0f} | {t.mean:.0f} | {held:.2f} |")
    return lines


def latency_table(server: dict[str, Timing], client: Iterable[Timing]) -> list[str]:
    """Markdown rows: per endpoint gunicorn's own time next to the client's; the gap is queueing + transfer."""
    lines = [
        "\nserver time (gunicorn, from taking the request to the last byte) against client latency\n",
        "| endpoint | server n | server p50 ms | server p95 ms | server mean ms | client p50 ms | client p95 ms "
        "| client mean ms | waiting (client mean - server mean) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in client:
        s = server.get(c.name)
        if s is None:
            lines.append(f"| {c.name} | 0 | | | | {c.p50:.0f} | {c.p95:.0f} | {c.mean:.0f} | |")
            continue
        lines.append(
            f"| {c.name} | {s.requests} | {s.p50:.1f} | {s.p95:.1f} | {s.mean:.1f} | {c.p50:.0f} | {c.p95:.0f} "
            f"| {c.mean:.0f} | {c.mean - s.mean:.0f} |"
        )
    return lines
