"""Claim tokens: who holds a row of background work, and whether that process is provably gone.

A worker that takes a row (a grading job, ``jobs.lifecycle``; an FSRS fit, ``cards.optimising``)
writes a token naming its process (``host:pid:start-time:nonce``) into the row. Whoever later finds the row
still running asks ``claimant_is_dead``: on this host a process that is gone (or a pid reused by another
process) is proof, and the row can be taken over or given up at once; on another host nothing is proven,
and each caller's stale-claim bound decides. Here, below every app, so that both can use it.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
from pathlib import Path

_active_tokens: set[str] = set()
_active_lock = threading.Lock()


@functools.cache
def _process_identity(pid: int) -> str:
    """host:pid:start-time; the start time tells a reused pid from the process that claimed."""
    return f"{socket.gethostname()}:{pid}:{_start_time(pid) or 0}"


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat, or None when the process is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def new_claim_token() -> str:
    token = f"{_process_identity(os.getpid())}:{os.urandom(4).hex()}"
    with _active_lock:
        _active_tokens.add(token)  # before any row names it: a live claim must never look dead
    return token


def release_claim(token: str) -> None:
    """Forget a claim this process held (the row is final or handed back)."""
    with _active_lock:
        _active_tokens.discard(token)


def claimant_is_dead(token: str) -> bool:
    """True only when we can prove it: the claimant ran on this host and is gone.

    On another host we cannot tell, and the stale-claim rule decides instead.
    """
    try:
        host, pid_text, start, _nonce = token.rsplit(":", 3)
        pid = int(pid_text)
    except ValueError:
        return True
    if host != socket.gethostname():
        return False
    if pid == os.getpid():
        with _active_lock:
            return token not in _active_tokens
    if not Path("/proc").is_dir():
        return False
    return _start_time(pid) != start
