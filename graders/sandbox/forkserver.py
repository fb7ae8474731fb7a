"""The fork server from the parent's side: one process per pool, started on first use and again after it
dies, asked for runners over a socket.

The process is the warden (``graders.sandbox.zygote.main``): a fresh interpreter with a cleared environment
that starts the zygote and watches its runners. It says hello once it can fork; until then, and when it
exits before that, jobs wait or fail with the last line it wrote to stderr (a traceback's last line says
why). Its stderr is relayed to ours, so a warm-up failure shows in the worker's log.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from graders.sandbox.exchange import SPAWN_TIMEOUT, Child, SandboxError, recv
from graders.sandbox.zygote import RunnerConfig

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOOT = (
    "import sys; sys.path.insert(0, sys.argv[2]); from graders.sandbox.zygote import RunnerConfig, main; "
    "main(int(sys.argv[1]), RunnerConfig.from_argv(sys.argv[3:]))"
)


class ForkServerFailed(SandboxError):
    """The zygote exited before it was ready (a missing module or library): jobs fail at once with why."""


class ForkServer:
    """The pool's fork server. ``closed`` says whether the pool closed (a wait for hello then stops);
    ``on_hello`` gets the hello message (the device, isolation, memory in huge pages) once per process."""

    def __init__(
        self,
        python: str,
        base: str,
        config: RunnerConfig,
        env: dict[str, str],
        *,
        closed: Callable[[], bool],
        on_hello: Callable[[dict[str, Any]], None],
    ) -> None:
        self.python, self.base, self.config, self.env = python, base, config, env
        self._closed, self._on_hello = closed, on_hello
        self.process: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._hello_lock = threading.Lock()
        self._greeted: subprocess.Popen[bytes] | None = None  # the process whose hello arrived
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._relay: threading.Thread | None = None

    def request_child(self, workdir: str) -> Child:
        """Send one spawn request; the child says "started" and then "ready" on its sockets."""
        sock, process = self._ensure()
        job_p, job_c = socket.socketpair()
        ctl_p, ctl_c = socket.socketpair()
        request = {"workdir": workdir}  # the rest went at the fork server's start
        try:
            with self._lock:
                socket.send_fds(sock, [json.dumps(request).encode()], [job_c.fileno(), ctl_c.fileno()])
        except OSError:
            job_p.close()
            ctl_p.close()
            raise
        finally:
            job_c.close()
            ctl_c.close()
        return Child(job_p, ctl_p, process)

    def alive_or_raise(self, cause: BaseException | None) -> None:
        process = self.process
        if process is not None and process.poll() is not None:
            raise SandboxError(f"the sandbox fork server exited: {self.reason(process)}") from cause

    def stop(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None
            if self.process is not None:
                try:
                    self.process.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    self.process.send_signal(signal.SIGKILL)
                    self.process.wait()
                self.process = None

    def reason(self, process: subprocess.Popen[bytes]) -> str:
        """Its last stderr line (a traceback ends with the exception), or how it ended."""
        relay = self._relay
        if relay is not None:
            relay.join(timeout=2.0)  # the pipe's end: every line read
        lines = [line for line in list(self._stderr_tail) if line.strip()]
        if lines:
            return lines[-1].strip()[:500]
        code = process.poll()
        return "it exited without a message" if code is None else f"it exited with status {code}"

    def _ensure(self) -> tuple[socket.socket, subprocess.Popen[bytes]]:
        """The live process's socket and process, starting a new one if the last one died; returns once it
        said hello (raises ``ForkServerFailed`` with its last stderr line if it exits first)."""
        with self._lock:
            if self.process is None or self.process.poll() is not None or self._sock is None:
                self._start()
            sock, process = self._sock, self.process
        assert sock is not None and process is not None
        self._await_hello(sock, process)
        return sock, process

    def _start(self) -> None:
        """Called with ``_lock`` held."""
        if self._sock is not None:  # the previous one died
            self._sock.close()
        if self.process is not None:
            self.process.wait()
        parent_end, server_end = socket.socketpair()
        self._stderr_tail.clear()
        os.makedirs(self.base, 0o700, exist_ok=True)  # its directory, if a /tmp cleaner took it
        self.process = subprocess.Popen(
            [self.python, "-I", "-c", BOOT, str(server_end.fileno()), PROJECT_ROOT, *self.config.argv()],
            pass_fds=[server_end.fileno()],
            env=self.env,
            cwd=self.base,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        server_end.close()
        self._sock = parent_end
        assert self.process.stderr is not None
        self._relay = threading.Thread(
            target=_relay_stderr, args=(self.process.stderr, self._stderr_tail), name="sandbox-stderr", daemon=True
        )
        self._relay.start()

    def _await_hello(self, sock: socket.socket, process: subprocess.Popen[bytes]) -> None:
        """Wait (outside ``_lock``, so ``stop`` is never held up) until the process is ready to fork."""
        with self._hello_lock:
            if self._greeted is process:
                return
            deadline = time.monotonic() + SPAWN_TIMEOUT
            while True:
                if self._closed():
                    raise SandboxError("the sandbox pool is closed")
                if process.poll() is not None:
                    raise ForkServerFailed(f"the sandbox fork server could not start: {self.reason(process)}")
                try:
                    readable, _, _ = select.select([sock], [], [], 0.05)
                except (OSError, ValueError):
                    raise SandboxError("the sandbox pool is closed") from None
                if readable:
                    hello = recv(sock, time.monotonic() + 5.0, 1 << 16)
                    if hello is None or hello[0].get("kind") != "hello":
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            process.wait(timeout=2)
                        raise ForkServerFailed(f"the sandbox fork server could not start: {self.reason(process)}")
                    break
                if time.monotonic() > deadline:
                    raise ForkServerFailed(f"the sandbox fork server did not start within {SPAWN_TIMEOUT:g} s")
            self._greeted = process
        self._on_hello(hello[0])


def _relay_stderr(stream: io.BufferedReader, tail: collections.deque[str]) -> None:
    """Copy the fork server's stderr to ours line by line and keep the last lines, whose final one says why
    one that could not start stopped."""
    try:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            tail.append(line.rstrip("\n"))
            sys.stderr.write(line)
    except (OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError):
            stream.close()
