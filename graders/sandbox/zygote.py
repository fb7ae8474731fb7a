"""The fork server: one fork per submission, each child a single-use runner.

Processes (the parent only talks to the launcher and to each child's two sockets):

    parent (Celery worker) --spawn requests, fds passed over a Unix socket--> launcher L
    launcher L: a fresh interpreter in a cleared environment; enters the device's namespaces
      (``jail.NAMESPACE_RECIPES``) while still single-threaded, forks the zygote, and is every runner's
      warden (``Warden``): it prepares the runner's directory, enforces the wall limit (SIGKILL through the
      runner's pidfd), reports exit status and CPU time on the runner's control socket, kills the runner
      when the parent goes away, and removes the runner's directory.
      '-- zygote Z: imports torch/numpy/RestrictedPython once (``prepare``), says "hello" to the parent
           (through L), never sees a secret or a reference answer. A CPU zygote is PID 1 of the pool's
           namespace and runs a warm-up job; for each request it calls unshare(CLONE_NEWPID), forks, and
           setns() back, so every CPU runner gets a PID namespace of its own. It only forks and reaps: it
           passes L each runner's pidfd and, once it exited, its wait status and CPU time. Every page it
           writes after a fork is a copy-on-write fault (the live runners share them) and splits a 2 MiB
           page that later forks copy entry by entry, so the warden's work runs in L, not here.
           '-- runner R (PID 1 of its own namespace on the CPU, so killing it kills anything it could start):
                (on a GPU: creates its CUDA context and warms up there), chroots into an empty directory,
                drops to an unprivileged uid where it is real root, rlimits, seccomp, sends "ready", runs
                exactly one job, sends the result, exits

A CUDA zygote touches no CUDA at all, not even ``torch.cuda.is_available()``: torch registers a fork handler
the first time it asks the driver anything (a CPU optimizer step asks), and every child forked after that
fails with "Cannot re-initialize CUDA in forked subprocess". So it runs the CPU warm-up (the lazy imports
it triggers cost each runner half a second otherwise) while torch.cuda answers "no GPU" without asking the
driver, and without gradients: autograd's engine, the first time it runs a backward pass, asks every
device type it knows for its device count (cudaGetDeviceCount, from C++, past torch.cuda), which starts the
driver in this process and arms the engine's own fork check; every runner forked after that failed on the
H100 with "CUDA error: initialization error". Each runner creates its context after its fork, warms up on
the GPU (gradients included) and only then says ready, and the pool creates runners ahead of demand.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import gc
import json
import marshal
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from graders.sandbox import jail, wire

WARMUP_CODE = """
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return F.relu(self.fc(x)).sum() + math.sqrt(4.0) + float(np.ones(2).sum())

def solution(x):
    out = torch.zeros(3, device=x.device)
    out[0] = x.sum()
    out[1] += 1
    print("warm", torch.tensor(1.0), f"{out[0].item():.2f}")
    net = Net().to(x.device)
    autograd = x.requires_grad  # False in a GPU fork server: autograd's engine must not start there
    for opt in (torch.optim.SGD(net.parameters(), lr=0.1), torch.optim.Adam(net.parameters())):
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1)
        for (xb,) in DataLoader(TensorDataset(x.reshape(1, 3)), batch_size=1):
            opt.zero_grad()
            if autograd:
                net(xb).backward()
            opt.step()
        sched.step()
    jac = torch.autograd.functional.jacobian(lambda t: t * t, x) if autograd else torch.diag(2 * x)
    leaf = torch.tensor([1.0, 2.0], requires_grad=autograd)
    if autograd:
        (leaf * 2).backward(torch.ones(2))
        torch.autograd.grad(leaf * 3, leaf, grad_outputs=torch.ones(2))
    picked = torch.tensor([[1, 2], [3, 4]])[[0, 1], [1, 0]]
    extra = torch.linalg.norm(jac) + torch.fft.rfft(x).abs().sum() + torch.special.expit(x).sum()
    extra = extra + float(np.random.default_rng(0).random() * 0) + float(np.linalg.norm(np.ones(2)))
    return net(x) + out.sum() + extra * 0 + picked.sum() * 0
"""


@dataclass(frozen=True)
class RunnerConfig:
    """What every runner of one fork server shares, given once when the fork server starts: a spawn
    request then carries only the runner's directory, and a runner parses nothing before its job."""

    device: str = "cpu"
    gpu_memory_mb: int = 1024
    runner_uid: int = jail.RUNNER_UID_BASE  # the start of the runners' uid range (``jail.reserve_uid``)
    guarded: bool = True  # False: layers 1 and 2 off (``SandboxPool(unguarded=True)``, the attack suite)

    def argv(self) -> list[str]:
        """How the pool passes it on the launcher's command line (``from_argv`` reads it back)."""
        return [self.device, str(self.gpu_memory_mb), str(self.runner_uid), "guarded" if self.guarded else "unguarded"]

    @classmethod
    def from_argv(cls, argv: list[str]) -> RunnerConfig:
        device, gpu_memory_mb, runner_uid, guarded = argv
        return cls(device, int(gpu_memory_mb), int(runner_uid), guarded == "guarded")


def main(fd: int, config: RunnerConfig) -> None:
    """Launcher: the device's namespaces while single-threaded (before torch), then the zygote in them
    (as their PID 1 where there is a PID namespace); the launcher stays as every runner's warden.

    The launcher starts in the pool's directory; if the parent dies without closing the pool (SIGKILL),
    the launcher gets SIGTERM, kills the zygote (and with it every runner) and removes that directory.
    """
    jail.set_parent_death_signal()
    jail.set_name("sbx-warden")
    registry = jail.open_uid_registry()  # as the host's user, before the user namespace
    isolation = jail.enter_namespaces(config.device, config.runner_uid)
    base = os.getcwd()
    link, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        jail.set_parent_death_signal()
        jail.set_name("sbx-zygote")
        os.close(fd)
        link.close()
        Zygote(zygote_end, isolation, config, registry).serve()
    zygote_end.close()
    if registry >= 0:
        os.close(registry)  # the zygote holds the reservations (a POSIX lock is its owner's alone)
    Warden(socket.socket(fileno=fd), link, pid, isolation, base).serve()


_MODULES: dict[str, Any] = {}


def prepare(device: str, guarded: bool = True) -> int:
    """Everything runners share with their fork server: imports, proxies, (CPU only) a warm-up job, the
    seccomp filter, frozen and huge-paged memory. Imported once, so a child never imports after chroot.
    Returns the bytes now in 2 MiB pages (0 where the host has no transparent huge pages).

    For ``cuda`` nothing here may reach the driver (see the module docstring): the CPU warm-up runs while
    torch.cuda says there is no GPU; each runner warms up again on the GPU once its context exists.
    """
    import copy  # noqa: F401
    import linecache  # noqa: F401
    import math  # noqa: F401

    import numpy  # noqa: F401
    import numpy.ma  # noqa: F401 - numpy.polyfit and friends import it lazily
    import numpy.polynomial  # noqa: F401
    import torch

    from graders.sandbox import casemaker, child, policy, proxies  # noqa: F401

    torch.set_num_threads(1)
    _MODULES.update(proxies.build_modules())
    with _no_cuda() if device == "cuda" else contextlib.nullcontext():
        error = _warm_up("cpu", autograd=device != "cuda")
    if error:
        sys.stderr.write(f"sandbox zygote warm-up failed: {error}\n")
    if not guarded:  # after the warm-up, which runs under the guards as every fork server's does
        policy.switch_off_guards()
    compile_rehearsal = policy.compile_submission if guarded else policy.compile_plain
    _REHEARSAL.append(compile_rehearsal(REHEARSAL_CODE, len(REHEARSAL_CODE)))
    gc.collect()
    jail.seccomp_program()  # built and compiled once here; each child only loads it
    gc.freeze()  # children share these pages copy-on-write; the collector must not touch (copy) them
    return jail.share_in_huge_pages()


CUDA_ENTRY_POINTS = ("is_available", "device_count", "init", "_lazy_init")  # what reaches the driver


@contextlib.contextmanager
def _no_cuda() -> Iterator[None]:
    """torch.cuda's entry points answer "no GPU" (or refuse) without asking the driver, while this lasts.

    Each of them, on a CUDA build, makes torch call cudaGetDeviceCount or cuInit, which registers its
    fork handler (the poison) and starts the driver in this process. Code that asks whether a GPU is
    there (Adam's step does) gets False and takes its CPU path. Restored afterwards: runners get torch
    as it was.
    """
    import torch

    def refuse() -> None:
        raise RuntimeError("the GPU fork server must not initialise CUDA")

    saved = {name: getattr(torch.cuda, name) for name in CUDA_ENTRY_POINTS}
    stand_ins = {"is_available": lambda: False, "device_count": lambda: 0, "init": refuse, "_lazy_init": refuse}
    for name, stand_in in stand_ins.items():
        setattr(torch.cuda, name, stand_in)
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(torch.cuda, name, original)


@dataclass
class _Runner:
    pid: int  # as the zygote sees it
    pidfd: int
    ctl: socket.socket | None  # None once the parent closed it
    workdir: str
    pidns: bool  # PID 1 of a namespace of its own
    deadline: float | None = None
    wall_killed: bool = False
    host_pid: int = 0  # its pid in our PID namespace, once armed
    cpu_limit: float | None = None  # CPU seconds the job may use, counted from when it was armed
    cpu_base: float = 0.0  # its CPU seconds when it was armed
    cpu_check: float | None = None  # when to look at its CPU clock next
    cpu_killed: bool = False


# Zygote -> warden messages on their SOCK_SEQPACKET link: a tag byte, then a fixed layout (the zygote
# builds no JSON, so it touches as little memory as possible between forks).
HELLO, SPAWNED, EXITED = b"H", b"S", b"X"
_SPAWNED = struct.Struct("<ii")  # pid (-1: no runner), whether it has a PID namespace of its own; + its pidfd
_EXITED = struct.Struct("<iidq")  # pid, wait status, CPU seconds, max RSS kB


class Warden:
    """The launcher's event loop: every runner's warden, outside the fork server.

    It prepares each runner's directory and hands the request to the zygote, enforces the wall limit
    (SIGKILL through the runner's pidfd, which the zygote passes it), reports exit status and CPU time on
    the runner's control socket, kills the runner when the parent goes away, and removes its directory.
    None of this runs in the zygote: every page the zygote writes after a fork is a copy-on-write fault
    (it shares them with the live runners), and each write into a shared 2 MiB page splits it into 512
    entries that every later fork copies and every runner's exit frees again.
    """

    def __init__(
        self, sock: socket.socket, link: socket.socket, zygote: int, isolation: dict[str, bool], base: str
    ) -> None:
        self.sock = sock  # the parent's requests, our answers
        self.link = link  # the zygote
        self.zygote = zygote
        self.isolation = isolation
        self.base = base
        self.pending: collections.deque[tuple[socket.socket, str]] = collections.deque()  # (ctl, workdir)
        self.runners: dict[int, _Runner] = {}  # by pid
        self.by_ctl: dict[socket.socket, _Runner] = {}

    def serve(self) -> None:
        signal.signal(signal.SIGTERM, self._parent_died)
        jail.set_parent_death_signal(signal.SIGTERM)
        if os.getppid() == 1:  # the parent died before the signal was armed
            self._parent_died(signal.SIGTERM, None)
        zygote_fd = os.pidfd_open(self.zygote)
        while True:
            waiting: list[Any] = [self.sock, self.link, zygote_fd, *self.by_ctl]
            deadlines = [d for r in self.runners.values() for d in (r.deadline, r.cpu_check) if d is not None]
            timeout = max(min(deadlines) - time.monotonic(), 0) if deadlines else None
            ready, _, _ = select.select(waiting, [], [], timeout)
            for item in ready:
                if item is self.sock:
                    self._request()
                elif item is self.link:
                    self._from_zygote()
                elif item is zygote_fd:
                    self._stop()  # the zygote died: its runners with it (its namespace, or PDEATHSIG)
                elif item in self.by_ctl:  # (not if its runner's exit, read just before, closed it)
                    self._control(item)
            self._enforce_deadlines()

    def _parent_died(self, signum: int, frame: Any) -> None:
        self._kill_zygote()
        _remove_tree(self.base)
        os._exit(0)

    def _kill_zygote(self) -> None:
        for runner in self.runners.values():
            _kill(runner)
        try:
            os.kill(self.zygote, signal.SIGKILL)
            os.waitpid(self.zygote, 0)
        except OSError:
            pass

    def _stop(self) -> None:
        self._kill_zygote()
        os._exit(0)

    def _request(self) -> None:
        msg, fds = _recv_fds(self.sock, 4)
        if not msg:  # the parent went away: so do we (runners die with the zygote's PID namespace)
            self._stop()
        if len(fds) != 2:
            for f in fds:
                os.close(f)
            return
        job_fd, ctl_fd = fds
        ctl = socket.socket(fileno=ctl_fd)
        try:
            workdir = str(json.loads(msg)["workdir"])
            self._make_directory(workdir)
            os.chmod(workdir, 0o555)  # the runner's root directory: nothing may be created in it
            socket.send_fds(self.link, [os.fsencode(workdir)], [job_fd])  # all a runner needs of the request
        except (OSError, ValueError, KeyError, TypeError):
            ctl.close()  # the parent sees the child never start
            return
        finally:
            os.close(job_fd)
        self.pending.append((ctl, workdir))

    def _make_directory(self, workdir: str) -> None:
        """The runner's directory, in the pool's; that one made again if something removed it.

        A ``/tmp`` cleaner (systemd-tmpfiles, tmpreaper) may remove the pool's directory under a running
        pool; without this every later runner failed to start and the pool never recovered.
        """
        try:
            os.mkdir(workdir, 0o700)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(workdir), 0o700, exist_ok=True)
            os.mkdir(workdir, 0o700)

    def _from_zygote(self) -> None:
        msg, fds = _recv_fds(self.link, 1)
        if not msg:
            self._stop()
        tag = msg[:1]
        if tag == HELLO:
            wire.send_message(self.sock, msg[1:])
        elif tag == SPAWNED:
            self._started(msg, fds)
        elif tag == EXITED:
            self._exited(msg)
        else:
            for f in fds:
                os.close(f)

    def _started(self, msg: bytes, fds: list[int]) -> None:
        pid, own_pidns = _SPAWNED.unpack_from(msg, 1)
        ctl, workdir = self.pending.popleft()
        if pid < 0 or len(fds) != 1:
            for f in fds:
                os.close(f)
            ctl.close()
            _remove_tree(workdir)
            return
        runner = _Runner(pid, fds[0], ctl, workdir, bool(own_pidns))
        self.runners[pid] = runner
        self.by_ctl[ctl] = runner
        _send(ctl, {"kind": "started", "isolation": {**self.isolation, "pidns": runner.pidns}})

    def _exited(self, msg: bytes) -> None:
        pid, status, cpu_seconds, max_rss_kb = _EXITED.unpack_from(msg, 1)
        runner = self.runners.pop(pid, None)
        if runner is None:
            return
        report = {
            "kind": "exit",
            "exit_code": os.waitstatus_to_exitcode(status),
            "cpu_ms": cpu_seconds * 1000.0,
            # Since the job was armed (its set-up before it, a CUDA context included, is ours, not the job's):
            # the kernel's account at the reaping less the runner's CPU clock read at arming.
            "job_cpu_ms": max(cpu_seconds - runner.cpu_base, 0.0) * 1000.0 if runner.cpu_limit is not None else None,
            "max_rss_kb": max_rss_kb,
            "wall_killed": runner.wall_killed,
            "cpu_killed": runner.cpu_killed,
        }
        if runner.ctl is not None:
            del self.by_ctl[runner.ctl]
            _send(runner.ctl, report)
            runner.ctl.close()
        os.close(runner.pidfd)
        _remove_tree(runner.workdir)

    def _control(self, ctl: socket.socket) -> None:
        runner = self.by_ctl[ctl]
        try:
            header, _ = wire.unpack(wire.recv_message(ctl, 4096))
        except (EOFError, OSError, wire.WireError):
            _kill(runner)  # the parent closed the child: it must not outlive that
            header = {"kind": "gone"}
            del self.by_ctl[ctl]
            ctl.close()
            runner.ctl = None
        if header.get("kind") == "arm" and runner.deadline is None:
            runner.deadline = time.monotonic() + float(header["wall"])
            if "cpu" in header:
                self._arm_cpu(runner, float(header["cpu"]))

    def _arm_cpu(self, runner: _Runner, seconds: float) -> None:
        """The job's CPU limit, measured here on the runner's CPU clock and enforced with SIGKILL.

        RLIMIT_CPU (the runner's backstop, ``jail.job_limits``) counts whole seconds from the runner's
        start: a "2 s" limit let a job use about 3 s. The clock is read when the runner could first have
        used its budget (all of it on one thread, or spread over the threads it has) and again as
        often as what is left allows, so a job that ends in milliseconds costs one read.
        """
        runner.host_pid = _pid_here(runner.pidfd)
        base = jail.process_cpu_seconds(runner.host_pid) if runner.host_pid else None
        if base is None:
            return
        runner.cpu_limit, runner.cpu_base = max(seconds, 0.0), base
        runner.cpu_check = time.monotonic() + runner.cpu_limit / self._threads(runner)

    def _check_cpu(self, runner: _Runner, now: float) -> None:
        used = jail.process_cpu_seconds(runner.host_pid)
        if used is None or runner.cpu_limit is None:
            runner.cpu_check = None
            return
        left = runner.cpu_limit - (used - runner.cpu_base)
        if left <= 0:
            _kill(runner)
            runner.cpu_killed = True
            runner.cpu_check = None
            return
        runner.cpu_check = now + max(left / self._threads(runner), MIN_CPU_CHECK)

    @staticmethod
    def _threads(runner: _Runner) -> int:
        """A CPU runner (a PID namespace of its own) has one thread (RLIMIT_NPROC 0); a GPU runner, several."""
        return 1 if runner.pidns else _threads(runner.host_pid)

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        for runner in self.runners.values():
            if runner.deadline is not None and now >= runner.deadline:
                _kill(runner)
                runner.wall_killed = True
                runner.deadline = None
            if runner.cpu_check is not None and now >= runner.cpu_check:
                self._check_cpu(runner, now)


MIN_CPU_CHECK = 0.002  # seconds between two reads of a runner's CPU clock, at the least


def _threads(pid: int) -> int:
    """How many threads process ``pid`` has (1 where /proc cannot tell)."""
    try:
        return max(1, len(os.listdir(f"/proc/{pid}/task")))
    except OSError:
        return 1


class Zygote:
    """Forks runners on request and reaps them; the warden (the launcher) does everything else."""

    def __init__(
        self, link: socket.socket, isolation: dict[str, bool], config: RunnerConfig | None = None, registry: int = -1
    ) -> None:
        self.link = link
        self.isolation = isolation
        self.config = config or RunnerConfig()
        self.environment = dict(os.environ)  # the clean one the pool started us with (jail.process_env)
        self.pid = os.getpid()
        self.live: dict[int, int] = {}  # pid by pidfd
        self.registry = registry  # the host's registry of runner uids (``jail.reserve_uid``), -1 without one
        self.uids: dict[int, int] = {}  # each live runner's uid by its pidfd, reserved until it is reaped
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY) if isolation["pidns"] else -1
        self.fork = os.fork

    def serve(self) -> None:
        """Prepare, say hello (the parent waits for it: a fork server that cannot start says why on its
        stderr and exits, and the pool reports that line at once), then serve requests forever."""
        try:
            huge = prepare(self.config.device, self.config.guarded)
        except BaseException:  # noqa: BLE001 - a missing module or library: the last stderr line says which
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        # Whatever the imports set, runners inherit exactly the environment the pool gave us: set here once,
        # not in every runner (where rewriting it cost ~115 copy-on-write faults).
        os.environ.clear()
        os.environ.update(self.environment)
        hello: dict[str, Any] = {"kind": "hello", "device": self.config.device, "isolation": self.isolation}
        hello["huge_pages_mb"] = huge // jail.MIB
        if jail.SECCOMP_ERROR:
            hello["seccomp_error"] = jail.SECCOMP_ERROR
        if _single_threaded():
            self.fork = _bare_fork
        self._tell(HELLO + wire.pack(hello))
        while True:
            waiting: list[socket.socket | int] = [self.link, *self.live]
            ready, _, _ = select.select(waiting, [], [])
            for item in ready:
                if isinstance(item, int):  # a runner's pidfd: it exited
                    self._reap(item)
                else:
                    self._spawn()

    def _tell(self, msg: bytes, fds: tuple[int, ...] = ()) -> None:
        try:
            if fds:
                socket.send_fds(self.link, [msg], fds)
            else:
                self.link.send(msg)
        except OSError:  # the warden is gone: so are we (and the runners, with our namespace)
            os._exit(0)

    def _spawn(self) -> None:
        msg, fds = _recv_fds(self.link, 1)
        if not msg:
            os._exit(0)
        if len(fds) != 1:
            for f in fds:
                os.close(f)
            self._tell(SPAWNED + _SPAWNED.pack(-1, 0))
            return
        job_fd = fds[0]
        uid, reserved = jail.reserve_uid(self.registry, set(self.uids.values()), self.config.runner_uid)
        fresh_pidns = self.own_pidns >= 0 and jail.unshare(jail.CLONE_NEWPID)
        try:
            pid = self.fork()
        except OSError:
            pid = -1
        if pid == 0:
            code = 70
            try:
                isolation = {**self.isolation, "pidns": fresh_pidns, "uid_reserved": reserved}
                code = runner(job_fd, os.fsdecode(msg), self.config, isolation, self.pid, uid)
            finally:
                os._exit(code)
        if fresh_pidns:
            jail.setns(self.own_pidns, jail.CLONE_NEWPID)  # the next child gets a namespace of its own again
        os.close(job_fd)
        if pid < 0:
            jail.release_uid(self.registry, uid)
            self._tell(SPAWNED + _SPAWNED.pack(-1, 0))
            return
        pidfd = os.pidfd_open(pid)
        self.live[pidfd] = pid
        self.uids[pidfd] = uid
        self._tell(SPAWNED + _SPAWNED.pack(pid, fresh_pidns), (pidfd,))

    def _reap(self, pidfd: int) -> None:
        pid = self.live.pop(pidfd)
        _pid, status, usage = os.wait4(pid, 0)
        jail.release_uid(self.registry, self.uids.pop(pidfd))  # after the wait: its uid owns nothing now
        os.close(pidfd)
        self._tell(EXITED + _EXITED.pack(pid, status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss))


_LIBC_WITH_GIL = ctypes.PyDLL(None, use_errno=True)  # its calls keep the GIL: no Python runs while it forks


def _single_threaded() -> bool:
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _bare_fork() -> int:
    """fork(2) through libc, without Python's at-fork handlers (``os.register_at_fork``).

    In a single-threaded fork server those handlers have nothing to do (they re-create the locks and the
    bookkeeping of other threads, and re-seed ``random``, which submissions cannot import), yet they touch
    shared pages: copy-on-write faults and CPU in every runner (docs/performance.md). libc's
    own handlers (malloc's locks, torch's thread pool) still run. The zygote uses it only while it has a
    single thread (``_single_threaded``), and ``os.fork`` otherwise.
    """
    pid = int(_LIBC_WITH_GIL.fork())
    if pid < 0:
        raise OSError(ctypes.get_errno(), "fork failed")
    return pid


def _recv_fds(sock: socket.socket, max_fds: int) -> tuple[bytes, list[int]]:
    """One message and the fds that came with it; ``b""`` when the peer is gone."""
    try:
        msg, fds, _flags, _addr = socket.recv_fds(sock, 65536, max_fds)
    except OSError:
        return b"", []
    return msg, fds


def _send(sock: socket.socket, header: dict[str, Any]) -> None:
    try:
        wire.send_message(sock, wire.pack(header))
    except OSError:
        pass


def _kill(runner: _Runner) -> None:
    try:
        signal.pidfd_send_signal(runner.pidfd, signal.SIGKILL)
    except OSError:
        pass
    if not runner.pidns:  # without a PID namespace of its own, its session is the next best thing
        group = _pid_here(runner.pidfd)
        if group > 0:
            try:
                os.killpg(group, signal.SIGKILL)
            except OSError:
                pass


def _pid_here(pidfd: int) -> int:
    """The pid of a pidfd's process in our PID namespace (the zygote's may be another): 0 if gone."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}") as info:
            for line in info:
                if line.startswith("Pid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _remove_tree(path: str) -> None:
    """Remove a runner's (or the pool's) directory, including read-only runner directories inside."""
    try:
        os.rmdir(path)  # a runner's directory is empty (seccomp lets it create nothing): one call
        return
    except OSError:
        pass
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            try:
                os.chmod(os.path.join(root, name), 0o755)
            except OSError:
                pass
    try:
        os.chmod(path, 0o755)
    except OSError:
        pass
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            try:
                os.rmdir(os.path.join(root, name))
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def runner(
    job_fd: int, workdir: str, config: RunnerConfig, isolation: dict[str, bool], zygote: int = 0, uid: int = 0
) -> int:
    """R: PID 1 of the new namespace where it has one (its death kills the namespace).

    Steps: 1. clean fds (the environment is the zygote's clean one); 2. device; 3. jail; 4. ready;
    5. one job; 6. result, exit.
    """
    t0 = time.perf_counter()
    jail.set_name("sbx-runner")
    os.setsid()  # without a PID namespace, the warden kills the session instead
    if not isolation["pidns"]:  # no namespace of its own dies with it: it dies with its parent, the zygote
        jail.set_parent_death_signal()
        if os.getppid() != zygote:
            return 71
    jail.close_other_fds(job_fd)
    jail.redirect_stdio()
    requested = config.device
    sock = socket.socket(fileno=job_fd)
    import torch

    device, gpu = _init_device(requested, config.gpu_memory_mb)
    t1 = time.perf_counter()
    warm_error = _warm_up_gpu() if device == "cuda" else ""  # the zygote warmed up the CPU path
    t2 = time.perf_counter()
    uid = uid or config.runner_uid
    in_use = jail.memory_in_use()  # /proc is gone after chroot
    locked = jail.lock_down(
        workdir, isolation["userns"], threads_allowed=requested != "cpu", own_pidns=isolation["pidns"], runner_uid=uid
    )
    t3 = time.perf_counter()
    rehearsal_error = _rehearse() if device == "cpu" else ""
    t4 = time.perf_counter()
    timings = {"setup_ms": (t1 - t0) * 1000, "warm_ms": (t2 - t1) * 1000, "jail_ms": (t3 - t2) * 1000}
    timings["rehearse_ms"] = (t4 - t3) * 1000
    ready = {"kind": "ready", "device": device, **locked, **isolation, **gpu}
    ready["timings"] = timings
    if warm_error:
        ready["warm_error"] = warm_error
    if rehearsal_error:
        ready["rehearsal_error"] = rehearsal_error
    wire.send_message(sock, wire.pack(ready))
    header, _ = wire.unpack(wire.recv_message(sock))
    code = marshal.loads(wire.recv_message(sock))  # compiled by the pool under layer 1's policy
    _, values = wire.unpack(wire.recv_message(sock))  # the cases: a message of their own (see pool)
    t5 = time.perf_counter()
    cpu_before = _cpu_seconds()
    jail.job_limits(float(header["cpu_seconds"]), int(header["memory_mb"]), device == "cuda", in_use)

    def facts(result: dict[str, Any]) -> None:
        """What the visible phase cost: set before its result is sent, never after hidden data arrived."""
        if device == "cuda":
            result["max_gpu_bytes"] = int(torch.cuda.max_memory_allocated())
        result["timings"] = {"run_ms": (time.perf_counter() - t5) * 1000}
        result["cpu_ms"] = (_cpu_seconds() - cpu_before) * 1000
        result["max_rss_kb"] = _max_rss_kb()

    _run(header, values, device, sock, code, facts)
    return 0


REHEARSAL_CODE = "def solution(x):\n    return x\n"
_REHEARSAL: list[types.CodeType] = []  # compiled under the policy by the zygote (``prepare``)


def _rehearse() -> str:
    """A tiny job through the job's own path (the wire, fresh guarded globals, the module body, one call,
    the result's encoding), in the jail, before the runner says ready; returns the error, if any.

    Why: a runner's first pass over that path writes to pages it shares with the zygote (reference
    counts, caches), and each write is a copy-on-write fault. Taken here, while the runner waits in the
    pool, they leave the learner's clock, for a little more CPU per runner (measured interleaved:
    docs/performance.md). It leaves nothing a submission can see: its globals,
    values and output are its own and dropped, and the random generators are seeded again.
    """
    import torch

    from graders.sandbox import child, policy

    glb: dict[str, Any] = {}
    try:
        values = wire.unpack(wire.pack({"kind": "cases"}, {"cases": [[torch.ones(2)]]}))[1]
        glb, _guards = policy.make_globals(_MODULES, policy.PrintSink(1000))
        exec(_REHEARSAL[0], glb)
        out = child.invoke(glb["solution"], tuple(values["cases"][0]), False)
        wire.pack({"kind": "result", "status": "ok"}, {"0": out})
    except Exception as exc:  # noqa: BLE001 - the job still runs; the pool shows why this failed
        return f"{type(exc).__name__}: {exc}"[:500]
    finally:
        glb.clear()  # the function and its globals hold each other: cleared, both go now, not at a collection
        child.seed_everything(0)
    return ""


def _max_rss_kb() -> int:
    """The runner's peak resident memory (torch's own share included, as judges report a process's)."""
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _cpu_seconds() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _run(
    header: dict[str, Any],
    values: dict[str, Any],
    device: str,
    sock: socket.socket,
    code: types.CodeType,
    facts: Callable[[dict[str, Any]], None],
) -> None:
    """The job in two phases, each ending in one message (DESIGN.md, the sandbox, layer 3).

    1. The visible cases: the result says everything (values, errors, printed output, timings). It is
       sent before this process ever holds a hidden input.
    2. Only then, and only if the pool asks (``hidden`` in the header), the hidden cases arrive and run with
       every print dropped. Their message carries values, ``ok`` flags and behaviour records and nothing
       else; the parent reduces each case to passed or failed. Whatever this process says after it holds
       hidden data (a forged message, a crash, a timing) becomes one of those bits or one status word.
    """
    from graders.sandbox import child, policy

    if header.get("background"):
        os.nice(19)  # a job nobody waits for (graders.drills.grading.SeedReservoir): the learners' runners go first

    def overflow() -> None:
        """Past the output cap the job ends at once: a bare ``except:`` in the submission cannot go on."""
        message = f"output limit: more than {sink.limit} bytes printed"
        result = {"kind": "result", "status": "output_limit", "message": message, "device": device}
        result["stdout"] = "" if sink.silent else sink.text()
        wire.send_message(sock, wire.pack(result))
        os._exit(0)

    sink = policy.PrintSink(int(header["output_bytes"]), on_overflow=overflow)
    visible = [tuple(c) for c in values.get("cases", [])]
    loaded: child.Loaded | None = None
    result: dict[str, Any] = {"status": "runtime_error", "message": "the pool sent no code object"}
    out_values: dict[str, Any] = {}
    if header.get("make_cases"):  # a drill's case expressions (``casemaker``): no learner code, no hidden phase
        from graders.sandbox import casemaker

        result, out_values = _guarded(lambda: casemaker.make(visible), sink)
        result.update(stdout="", device=device, kind="result")
        facts(result)
        _send_result(sock, result, out_values)
        return
    if isinstance(code, types.CodeType):
        found, _ = _guarded(lambda: (child.load(header, _MODULES, sink, code), {}), sink)
        if isinstance(found, child.Loaded):
            loaded = found
            result, out_values = _guarded(lambda: child.run_cases(found, visible, header, device, sink), sink)
        else:
            result = found
    result.update(stdout=sink.text(), device=device, kind="result")
    facts(result)
    _send_result(sock, result, out_values)
    if not header.get("hidden") or result.get("status") != "ok" or loaded is None:
        return
    _, hidden_values = wire.unpack(wire.recv_message(sock))
    hidden = [tuple(c) for c in hidden_values.get("cases", [])]
    sink.silent = True  # for good: nothing printed from here on is kept (it still counts against the cap)
    ran, out_values = _guarded(lambda: child.run_cases(loaded, hidden, header, device, sink, each=False), sink)
    cases = [{"ok": c.get("ok") is True, "behaviour": c.get("behaviour")} for c in ran.get("cases", [])]
    _send_result(sock, {"kind": "hidden", "status": ran.get("status"), "cases": cases}, out_values)


def _guarded(step: Callable[[], tuple[Any, dict[str, Any]]], sink: Any) -> tuple[Any, dict[str, Any]]:
    """A step of the job; anything it raises past the learner's own handling ends the phase as a status."""
    from graders.sandbox import child, policy

    try:
        return step()
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, policy.OutputLimitExceeded) or sink.overflowed:
            return {"status": "output_limit", "message": f"output limit: more than {sink.limit} bytes printed"}, {}
        if child.is_memory_error(exc):
            return {"status": "memory_limit", "message": "memory limit exceeded"}, {}
        return {"status": "runtime_error", "message": f"{type(exc).__name__} while grading"}, {}


def _send_result(sock: socket.socket, header: dict[str, Any], values: dict[str, Any]) -> None:
    try:
        data = wire.pack(header, values)
    except BaseException as exc:  # noqa: BLE001 - a value that cannot be encoded
        message = f"the result cannot be returned: {exc}"[:2000]
        data = wire.pack({"kind": header.get("kind"), "status": "runtime_error", "message": message})
    wire.send_message(sock, data)


def _init_device(requested: str, gpu_memory_mb: int) -> tuple[str, dict[str, Any]]:
    """The runner's device and what it learned: a CUDA context under a memory cap, or why there is none.

    ``torch.cuda.init()``, not ``is_available()``: the latter turns the driver's error (304 in a user or
    PID namespace, or torch's fork poison) into a warning and False; the pool must be told the reason.
    """
    import torch

    if requested != "cuda":
        return "cpu", {}
    if not torch.backends.cuda.is_built():
        return "cpu", {"cuda_error": f"this torch ({torch.__version__}) is built without CUDA"}
    inherited = _driver_inherited()  # before this runner's own init maps the driver
    try:
        torch.cuda.init()
        total = int(torch.cuda.get_device_properties(0).total_memory)
        # The caching allocator refuses to reserve more than this share of the device (its cuBLAS workspace
        # included); the submission cannot reach torch.cuda to change it (layer 2 exposes is_available only).
        torch.cuda.set_per_process_memory_fraction(min(1.0, gpu_memory_mb * jail.MIB / total))
        a = torch.ones(64, 64, device="cuda")
        (a @ a).sum().item()  # creates the context and the cuBLAS handle
    except Exception as exc:  # noqa: BLE001 - any failure is the reason this runner has no GPU
        reason = f"{type(exc).__name__}: {exc}"[:500]
        if inherited:
            reason = "the fork server had started the CUDA driver before this runner's fork: " + reason
        return "cpu", {"cuda_error": reason[:600]}
    gpu = {"name": torch.cuda.get_device_name(0), "total_mb": total // jail.MIB, "cap_mb": gpu_memory_mb}
    return "cuda", {"gpu": gpu}


def _driver_inherited() -> bool:
    """Whether the CUDA driver (libcuda) was already mapped when this runner tried to start it: only a
    fork server that reached the driver passes it on, and then no child of it can use CUDA."""
    try:
        with open("/proc/self/maps") as maps:
            return any("libcuda.so" in line for line in maps)
    except OSError:
        return False


GPU_WARMUP_CODE = """
import torch
import torch.nn.functional as F

def solution(x):
    y = (x.reshape(3, 1) * x + 1) ** 2
    z = torch.cat([y, y.T]).softmax(dim=1).argmax(dim=1)
    w = torch.where(y > 2, y, -y)[[0, 2]].index_select(1, torch.tensor([0, 1], device=x.device))
    loss = F.cross_entropy(y, z[:3]) + F.mse_loss(y, y * 0.5) + w.mean() + y.max() + x.cumsum(0)[-1]
    return loss + x.to("cpu").to(x.device).norm()
"""


def _warm_up_gpu() -> str:
    """The CPU path's warm-up job on the GPU, then the kernels drills use most, all before the jail: after
    chroot the driver can no longer open a library, and a kernel loaded here is not loaded on the clock."""
    import torch

    from graders.sandbox import child, policy

    error = _warm_up("cuda")
    sink = policy.PrintSink(1000)
    job = {"code": GPU_WARMUP_CODE, "entry_point": "solution", "max_source_bytes": 20000, "grad": True}
    try:
        result, _values = child.run_job(job, [(torch.arange(3.0),)], _MODULES, sink, "cuda")
        error = error or ("" if result.get("status") == "ok" else str(result))
    except Exception:
        error = error or traceback.format_exc()
    del job, sink
    gc.collect()  # no globals, function or print sink of the warm-up jobs is left for the collector to find
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # a warm runner holds its context, not the warm-up's tensors
    torch.cuda.reset_peak_memory_stats()
    child.seed_everything(0)
    return error[-2000:]


def _warm_up(device: str, autograd: bool = True) -> str:
    """Run a small job through the whole path so lazy initialisation happens before the jail; without
    ``autograd`` no backward pass runs (a GPU fork server's warm-up, see the module docstring)."""
    import torch

    from graders.sandbox import child, policy

    sink = policy.PrintSink(1000)
    job = {"code": WARMUP_CODE, "entry_point": "solution", "max_source_bytes": 20000, "grad": autograd}
    try:
        result, values = child.run_job(job, [(torch.ones(3),)], _MODULES, sink, device)
        wire.unpack(wire.pack(result, values))
        error = "" if result.get("status") == "ok" else str(result)
    except Exception:
        error = traceback.format_exc()
    child.seed_everything(0)
    return error[-2000:]
