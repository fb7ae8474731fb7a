"""Layer 3 inside the child: namespaces, chroot, rlimits, seccomp, a clean environment.

Every step is best effort where the host may not allow it (no user namespaces in some containers), and
each reports what it achieved, so the ready message says which isolation a child really has.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import math
import os
import resource
import secrets
import signal
import time
from collections.abc import Callable
from typing import Any

try:  # imported here, before any chroot, so install_seccomp never has to import
    import pyseccomp as seccomp

    SECCOMP_ERROR = ""
except Exception as exc:  # not installed, or libseccomp's shared library missing (RuntimeError from pyseccomp)
    seccomp = None
    SECCOMP_ERROR = f"{type(exc).__name__}: {exc}"[:300]

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
MIB = 1024 * 1024
CUDA_ADDRESS_SPACE = 64 * 1024 * MIB  # CUDA reserves ~18 GB of address space; below 32 GiB it breaks

# Every runner becomes a uid of its own from this range (``reserve_uid``), in the pool's user namespace
# (mapped to the same host uids) or, without one, on the host: the kernel counts tasks, pending signals,
# pipe buffers and epoll watches per uid, so RLIMIT_NPROC bounds each runner alone, and no two runners share
# an owner for signals, renicing or files. A uid is drawn at random (it tells a runner nothing of how many
# ran before it) and reserved in a registry every pool on the host shares (no two live runners of any pools
# have the same one: the first runners of two pools once did).
RUNNER_UID_BASE = 1_600_000_000  # far above any account's uid
RUNNER_UID_COUNT = 1 << 28  # 268 million: the range ends below 2**31 (1_868_435_456)
RUNNER_UID_REGISTRY = "quizsite-runner-uids"  # in the host's /tmp: a file of no bytes, locked a byte per uid
RUNNER_EXTRA_TASKS = 32  # a GPU runner may start this many threads beyond those it had when it got ready
HOSTNAME = b"sandbox"  # what uname(2) says in a runner (its own UTS namespace), not the host's name


def open_uid_registry(directory: str = "/tmp") -> int:
    """The host's registry of the runner uids in use, opened before the pool's namespaces (so a root pool
    opens it as the host's root); -1 where it cannot be opened (uids are then random, not reserved)."""
    path = os.path.join(directory, RUNNER_UID_REGISTRY)
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return -1


def reserve_uid(
    registry: int,
    held: set[int],
    base: int = RUNNER_UID_BASE,
    draw: Callable[[int], int] = secrets.randbelow,
    tries: int = 64,
) -> tuple[int, bool]:
    """A new runner's uid: random in ``base``'s range, not one this process ``held`` already, and locked in
    the registry (a POSIX lock on the byte at offset ``uid``, ``release_uid`` or this process's death frees
    it) so that no live runner of another pool has it. Returns the uid and whether it is reserved.

    POSIX locks belong to a process: a uid this process locked is not refused by the kernel, hence ``held``;
    a runner inherits no lock across fork (and closes the registry's fd with every other).
    """
    uid = base
    for _ in range(tries):
        uid = base + draw(RUNNER_UID_COUNT)
        if uid in held:
            continue
        if registry < 0:
            return uid, False
        try:
            fcntl.lockf(registry, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, uid)
            return uid, True
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                return uid, False
    return uid, False  # the registry refused every draw (someone locks it all): random, not reserved


def release_uid(registry: int, uid: int) -> None:
    """Free a reserved uid (its runner was reaped)."""
    if registry >= 0:
        with contextlib.suppress(OSError):
            fcntl.lockf(registry, fcntl.LOCK_UN, 1, uid)


CLEAN_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MALLOC_ARENA_MAX": "2",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "TORCH_CPP_LOG_LEVEL": "ERROR",
}


def process_env(device: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a fork server and its runners: ``CLEAN_ENV`` plus the device's part.

    A CPU runner sees no GPU even on a GPU host (``CUDA_VISIBLE_DEVICES`` empty), so a submission graded on
    the CPU cannot open the GPU outside the GPU runners' memory cap.
    """
    env = dict(CLEAN_ENV)
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env["CUDA_MODULE_LOADING"] = "LAZY"  # kernels load on first use: a context costs less memory and time
        env.update(extra or {})
    return env


_libc = ctypes.CDLL(None, use_errno=True)


def unshare(flags: int) -> bool:
    """unshare(2) through libc (Python 3.11 has no os.unshare); False when the host refuses."""
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        return False
    return True


def sethostname(name: bytes) -> bool:
    return bool(_libc.sethostname(name, ctypes.c_size_t(len(name))) == 0)


def setns(fd: int, nstype: int) -> bool:
    return bool(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)) == 0)


MADV_HUGEPAGE = 14
MADV_COLLAPSE = 25  # Linux 6.1+
HUGE_PAGE = 2 * MIB


def share_in_huge_pages() -> int:
    """Back the fork server's private memory with 2 MiB pages; returns the bytes collapsed.

    fork() copies one page-table entry per 4 KiB page and the child's exit frees them again: with
    torch loaded (about 220 MiB of heap) that was most of a submission's CPU. A huge page is one entry.
    A child that writes to one only splits that mapping and copies the 4 KiB page it touched, so
    sharing stays copy-on-write at 4 KiB. Best effort: kernels without THP or MADV_COLLAPSE keep 4 KiB.
    """
    madvise = _libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    collapsed = 0
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.readlines()
    except OSError:
        return 0
    for line in lines:
        fields = line.split()
        path = fields[5] if len(fields) > 5 else ""
        if "w" not in fields[1] or path not in ("", "[heap]"):
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        start, end = -(-low // HUGE_PAGE) * HUGE_PAGE, high // HUGE_PAGE * HUGE_PAGE
        if end - start < HUGE_PAGE:
            continue
        if madvise(start, end - start, MADV_HUGEPAGE) == 0 and madvise(start, end - start, MADV_COLLAPSE) == 0:
            collapsed += end - start
    return collapsed


def set_parent_death_signal(sig: int = signal.SIGKILL) -> None:
    _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)


PR_SET_NAME = 15


def set_name(name: str) -> None:
    """The process's name as ``ps``, ``top`` and ``perf`` show it (15 bytes at most): which of the
    sandbox's roles (launcher, zygote, runner) a process is, without reading its command line."""
    _libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def set_undumpable() -> None:
    """Make /proc/<pid>/mem, environ, maps and the like of this process root's, and ptrace need root.

    A runner without chroot (an unprivileged GPU worker cannot have one) runs as the same user as its
    worker and the other runners; without this it could read their memory and the worker's secrets
    through /proc, since the kernel lets a process of the same user read a dumpable one's.
    """
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def is_dumpable() -> bool:
    return bool(_libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))


_USER_NET_PID = (CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID, {"userns": True, "netns": True, "pidns": True})
_USER_NET = (CLONE_NEWUSER | CLONE_NEWNET, {"userns": True, "netns": True, "pidns": False})
_NET = (CLONE_NEWNET, {"userns": False, "netns": True, "pidns": False})

# The namespaces a fork server asks for, best first, per device. Each tier is tried with an IPC namespace
# of its own first (CLONE_NEWIPC), then without.
# - cpu: a user namespace (so chroot works unprivileged) and a PID namespace (each runner is PID 1 of its own).
# - cuda: a network namespace only. Measured on an H100 (driver 580, torch 2.11, as root): cuInit fails with
#   error 304 ("OS call failed or operation not supported on this OS") inside user + network + PID
#   namespaces and inside network + PID namespaces, and works inside a network namespace alone. What the
#   missing namespaces gave is kept by other means: chroot and an unprivileged uid where the fork server is
#   root, a seccomp filter that confines signals to the runner itself, PR_SET_PDEATHSIG for the clean-up.
NAMESPACE_RECIPES: dict[str, tuple[tuple[int, dict[str, bool]], ...]] = {
    "cpu": (_USER_NET_PID, _USER_NET, _NET),
    "cuda": (_NET,),
}


def enter_namespaces(device: str = "cpu", uid_base: int = RUNNER_UID_BASE) -> dict[str, bool]:
    """The device's namespace recipe (``NAMESPACE_RECIPES``), the first tier the host allows.

    With a PID namespace, the next fork becomes its PID 1. The IPC namespace means no System V objects or
    POSIX queues are shared with the host; the seccomp filter denies the IPC calls to the runners anyway,
    so two submissions cannot meet there even where the host refuses the namespace. Every tier comes with
    a UTS namespace of its own where the host allows one, named ``HOSTNAME``: a runner learns nothing of
    the host from uname(2) (CUDA works in Docker's containers, which all have one). A new user namespace
    gets its uid and gid maps (``_IdMapper``): root, and the runners' uids (``runner_uid``).
    """
    for flags, got in NAMESPACE_RECIPES[device]:
        for extra in (CLONE_NEWIPC | CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUTS, 0):
            mapper = _IdMapper(uid_base) if flags & CLONE_NEWUSER else None
            entered = unshare(flags | extra)
            mapped = mapper.finish(entered) if mapper is not None else False
            if entered:
                utsns = bool(extra & CLONE_NEWUTS) and sethostname(HOSTNAME)
                return {**got, "ipcns": bool(extra & CLONE_NEWIPC), "utsns": utsns, "uid_map": mapped}
    return {"userns": False, "netns": False, "pidns": False, "ipcns": False, "utsns": False, "uid_map": False}


class _IdMapper:
    """Writes a new user namespace's uid and gid maps from outside it, as the kernel requires.

    Only a process in the parent namespace with CAP_SETUID there may map more than one id, so a helper
    forked before ``unshare`` (the launcher is single-threaded) waits for the word and writes
    ``0 0 1`` (root stays root, so a runner's setuid clears its capabilities as on the host) and the
    runners' range, mapped to the same host ids. Unprivileged, the write fails and the namespace keeps no
    map: runners then stay in it with the worker's uid (RLIMIT_NPROC still bites: that uid is not root).
    """

    def __init__(self, uid_base: int) -> None:
        self.lines = f"0 0 1\n{uid_base} {uid_base} {RUNNER_UID_COUNT}\n"
        self.read, self.write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            self._serve(os.getppid())

    def _serve(self, target: int) -> None:
        code = 1
        try:
            os.close(self.write)
            if os.read(self.read, 1) == b"1":
                for name in ("uid_map", "gid_map"):
                    with open(f"/proc/{target}/{name}", "w") as fh:
                        fh.write(self.lines)
                code = 0
        except OSError:
            pass
        finally:
            os._exit(code)

    def finish(self, unshared: bool) -> bool:
        """Tell the helper whether to write (the namespace exists), wait for it; True if it wrote both."""
        os.close(self.read)
        try:
            os.write(self.write, b"1" if unshared else b"0")
        finally:
            os.close(self.write)
        _pid, status = os.waitpid(self.pid, 0)
        return unshared and os.waitstatus_to_exitcode(status) == 0


def enter_directory(path: str) -> bool:
    """chroot into the empty per-child directory wherever we hold CAP_SYS_CHROOT.

    That is root in the runner's own user namespace, and also real root without one (a GPU runner, or a
    host that refuses user namespaces): the attempt costs one system call where it is refused.
    """
    try:
        os.chroot(path)
        os.chdir("/")
        return True
    except OSError:
        os.chdir(path)
        return False


def drop_privileges(uid: int) -> bool:
    """Root (real, or in the pool's user namespace with ``runner_uid``'s range mapped): become ``uid``
    with no groups and no capabilities, after chroot and before seccomp.

    Without a PID namespace a root runner could otherwise signal or read any process of the host; as an
    unprivileged user of its own the kernel's permission checks stop that, nothing in its root is its own,
    and RLIMIT_NPROC counts its threads alone.
    """
    if os.geteuid() != 0:
        return False
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    except OSError:
        return False
    return os.geteuid() == uid


# Per-user budgets of the kernel's that a runner gets none of (``static_limits``), whatever the host's defaults.
# RLIMIT_SIGPENDING 0: no real-time signal can be queued to a runner (the kernel charges a queued signal to
# the receiver's uid and, through its user namespace, to the namespace's owner, host root: a runner once left
# root with no real-time signals or POSIX timers, and two runners read each other's count). The few
# standard signals the kernel queues past the limit (one of each, as it must) are all a runner can hold.
# RLIMIT_MSGQUEUE 0: no bytes of POSIX message queues (mq_open is denied by seccomp as well). RLIMIT_RTPRIO
# and RLIMIT_NICE 0: no real-time or raised priority. RLIMIT_MEMLOCK 0: no host memory pinned.
ZERO_LIMITS = ("RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_RTPRIO", "RLIMIT_NICE", "RLIMIT_MEMLOCK")


def static_limits(threads_allowed: bool, tasks: int | None = None) -> None:
    """Limits that hold from warm-up on: no files written, no core dumps, no new processes, none of the
    per-user budgets in ``ZERO_LIMITS``, and tasks bounded: a CPU runner starts no thread at all, a GPU runner
    at most ``RUNNER_EXTRA_TASKS`` beyond the ``tasks`` it has. The kernel counts RLIMIT_NPROC per uid (and
    never for root), so this bounds the runner alone once it has a uid of its own (``drop_privileges``;
    without one, ``tasks`` is None and a GPU runner keeps its limit: its uid's count is the worker's too);
    seccomp covers fork. Called after ``drop_privileges``: glibc's set*id in a threaded process (a GPU
    runner) signals every thread with a real-time signal, which RLIMIT_SIGPENDING 0 would refuse."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, no kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name in ZERO_LIMITS:
        _try_setrlimit(getattr(resource, name), (0, 0))
    if not threads_allowed:
        _try_setrlimit(resource.RLIMIT_NPROC, (0, 0))
    elif tasks is not None:
        _try_setrlimit(resource.RLIMIT_NPROC, (tasks + RUNNER_EXTRA_TASKS, tasks + RUNNER_EXTRA_TASKS))


def task_count() -> int:
    """This process's threads (from /proc, so before chroot); 1 if unknown."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def process_cpu_seconds(pid: int) -> float | None:
    """CPU seconds of process ``pid`` (all its threads), from its CPU clock; None once it is gone.

    The warden's measurement of a runner: nanosecond resolution, one system call, no /proc parsing.
    """
    clock = ((~pid) << 3) | 2  # the kernel's CPUCLOCK_SCHED process clock of ``pid`` (clock_getcpuclockid)
    try:
        return time.clock_gettime(clock)
    except OSError:
        return None


def memory_in_use() -> tuple[int, int]:
    """This process's address space and data size (VmSize; VmData: heap, private writable mappings,
    thread stacks) in bytes, (0, 0) if unknown. Read before chroot: /proc is gone after it."""
    sizes = {"VmSize:": 0, "VmData:": 0}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.split(":")[0] + ":" in sizes:
                    sizes[line.split()[0]] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return sizes["VmSize:"], sizes["VmData:"]


def job_limits(cpu_seconds: float, memory_mb: int, cuda: bool, in_use: tuple[int, int] = (0, 0)) -> None:
    """Per-job limits: CPU seconds counted from now, ``memory_mb`` on top of what the runner already uses
    (``in_use``, from ``memory_in_use`` when it got ready), open files.

    What torch itself maps is the host's business, not the job's: a CUDA build of torch maps gigabytes of
    libraries even in a CPU runner (seen on the H100 host: a CPU runner under a 1 GiB address-space cap
    could not allocate 400 MB), so the cap is counted from the runner's own size. A CPU runner's address
    space is capped at its size plus ``memory_mb`` (the fallback where the size is unknown: ``memory_mb``
    in all). A GPU runner's address space cannot be capped below CUDA's reservations (about 18 GB of it;
    under 32 GiB CUDA breaks), so it keeps 64 GiB of it. Both have their data size capped at ``memory_mb``
    on top of theirs: that counts what a job can fill (heap, private writable mappings, thread stacks) and
    not the libraries, the driver's inaccessible reservations or its device mappings.
    """
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = used.ru_utime + used.ru_stime
    soft = int(math.ceil(spent + max(cpu_seconds, 0.01)))
    # soft == hard: the kernel sends SIGKILL at the limit, which also reaches a PID-namespace init
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft))
    address_base, data_base = in_use
    address_space = CUDA_ADDRESS_SPACE if cuda else address_base + memory_mb * MIB
    _try_setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    if data_base:
        data = data_base + memory_mb * MIB
        _try_setrlimit(resource.RLIMIT_DATA, (data, data))
    open_fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    nofile = 32 if not cuda else max(256, open_fds + 64)  # the CUDA driver keeps many fds open
    _try_setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))


def _try_setrlimit(which: int, limits: tuple[int, int]) -> None:
    try:
        resource.setrlimit(which, limits)
    except (ValueError, OSError):
        pass


DENIED_SYSCALLS = (
    "socket socketpair connect bind listen accept accept4 execve execveat fork vfork ptrace process_vm_readv "
    "process_vm_writev unshare setns mount umount2 pivot_root chroot bpf perf_event_open keyctl add_key "
    "request_key userfaultfd io_uring_setup io_uring_enter io_uring_register personality init_module "
    "finit_module delete_module reboot swapon swapoff kexec_load kexec_file_load open_by_handle_at "
    "name_to_handle_at mknod mknodat setuid setgid setreuid setregid setresuid setresgid setgroups "
    "symlink symlinkat link linkat acct quotactl syslog iopl ioperm fanotify_init pidfd_open pidfd_getfd "
    "memfd_create move_mount open_tree fsopen fsmount fspick mount_setattr "
    # IPC: no System V shared memory, queues or semaphores and no POSIX message queues, the channels a
    # runner could leave behind for the next submission.
    "shmget shmat shmdt shmctl msgget msgsnd msgrcv msgctl semget semop semtimedop semctl "
    "mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr "
    # The filesystem is read-only to a runner, also where a directory is its own: no entry created,
    # renamed or removed, no mode, owner, time or extended attribute changed. So a runner cannot leave
    # a tree for its fork server to walk (a 1,300-deep chain once crashed the clean-up) nor change the
    # directory it was given; files are not opened for creation (see seccomp_filter).
    "mkdir mkdirat rmdir rename renameat renameat2 unlink unlinkat creat truncate chmod fchmod fchmodat "
    "fchmodat2 chown fchown lchown fchownat setxattr lsetxattr fsetxattr removexattr lremovexattr "
    "fremovexattr utime utimes utimensat futimesat "
    # Host-wide resources and identity: asynchronous I/O contexts charge the host's fs.aio-nr budget,
    # sync and syncfs force the host's write-back, sysinfo tells the host's process count, load and
    # memory, and a runner must not rename the UTS namespace the pool's runners share. flock and the
    # lock commands of fcntl (a rule below) are denied too: a lock on an inode two runners can both reach
    # (a GPU runner's device files) is a channel between them. inotify instances are a per-user budget
    # of the host's, and memfd_secret memory is locked memory.
    "io_setup io_destroy io_submit io_cancel io_getevents io_pgetevents sync syncfs sysinfo sysfs ustat "
    "sethostname setdomainname flock inotify_init inotify_init1 memfd_secret "
    # Per-user budgets and what uses them: a real-time signal queued with its data (to itself: a pending
    # signal is charged to the uid and to the user namespace's owner, host root), POSIX timers (each holds a
    # queued signal), a signal through a pidfd. A single-use runner needs none of them; kill and tgkill stay
    # (to itself only, without a PID namespace: ``install_signal_filter``), and queue nothing under
    # RLIMIT_SIGPENDING 0 (``ZERO_LIMITS``).
    "rt_sigqueueinfo rt_tgsigqueueinfo pidfd_send_signal timer_create timer_settime timer_gettime "
    "timer_getoverrun timer_delete"
).split()
F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 5, 6, 7, 36, 37, 38
F_SETLEASE, F_NOTIFY, F_SETPIPE_SZ = 1024, 1026, 1031
# Locks, leases and notifications: a channel on any inode two runners reach. F_SETPIPE_SZ: pipe buffers are
# a per-user budget (past fs.pipe-user-pages-soft every new pipe of that uid gets one page).
LOCK_COMMANDS = (F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_NOTIFY, F_SETPIPE_SZ)
# open(2)/openat(2) with one of these flags would create a file (O_TMPFILE holds O_DIRECTORY's bit too).
CREATE_FLAGS = (os.O_CREAT, getattr(os, "O_TMPFILE", 0o20200000) & ~os.O_DIRECTORY)


def seccomp_filter() -> Any:
    """The filter, built once per process: the fork server builds it and its program (``seccomp_program``),
    each child only loads that.

    Deny network, exec, new processes, tracing and kernel-facing calls; threads stay possible.
    clone3 answers ENOSYS so glibc falls back to clone(2), where the flags are visible: clone without
    CLONE_THREAD (a new process) is refused with EPERM.
    """
    global _FILTER
    if seccomp is None:
        return None
    if _FILTER is None:
        filt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        for name in DENIED_SYSCALLS:
            try:
                filt.add_rule(seccomp.ERRNO(errno.EPERM), name)
            except Exception:  # a syscall this architecture does not have
                continue
        filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "openat2")  # its flags sit in a struct; glibc falls back
        for flag in CREATE_FLAGS:
            for name, flags_arg in (("open", 1), ("openat", 2)):
                try:
                    filt.add_rule(
                        seccomp.ERRNO(errno.EPERM), name, seccomp.Arg(flags_arg, seccomp.MASKED_EQ, flag, flag)
                    )
                except Exception:  # a syscall this architecture does not have
                    continue
        filt.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
        for command in LOCK_COMMANDS:  # and F_SETPIPE_SZ
            filt.add_rule(seccomp.ERRNO(errno.EPERM), "fcntl", seccomp.Arg(1, seccomp.EQ, command))
        _FILTER = filt
    return _FILTER


_FILTER: Any = None
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
PR_SET_THP_DISABLE = 41  # inherited across fork and exec: a host without huge pages (tests, bench)
SECCOMP_MODE_FILTER = 2


class _SockFprog(ctypes.Structure):
    """The kernel's ``struct sock_fprog``: a BPF program's length in instructions and its address."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@functools.cache
def seccomp_program() -> tuple[ctypes.Array[ctypes.c_char], _SockFprog] | None:
    """The filter's BPF program (the buffer, and the struct that points into it), generated once by
    libseccomp (``export_bpf``); None without pyseccomp.

    ``SyscallFilter.load()`` generates the program again on every call; in a fresh runner that walk of
    libseccomp's rule database was ~120 copy-on-write faults. Generated in the fork server, the program
    is shared with every runner, which hands it to the kernel in two system calls (``install_seccomp``).
    """
    filt = seccomp_filter()
    if filt is None:
        return None
    read, write = os.pipe()
    try:
        with os.fdopen(write, "wb") as sink:  # a few hundred instructions: well under a pipe's buffer
            filt.export_bpf(sink)
        program = b"".join(iter(lambda: os.read(read, 65536), b""))
    finally:
        os.close(read)
    buffer = ctypes.create_string_buffer(program, len(program))
    return buffer, _SockFprog(len(program) // 8, ctypes.addressof(buffer))


def install_seccomp() -> bool:
    """Load the filter into this process (and every thread it starts later); False without pyseccomp.

    Exactly what libseccomp's ``seccomp_load`` does with the filter's default attributes: no_new_privs,
    then the program with no flags (no TSYNC, log or notification listener).
    """
    compiled = seccomp_program()
    if compiled is None:
        return False
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(compiled[1]))
    return True


def _prctl(option: int, argument: int, pointer: Any = None) -> None:
    """prctl(2) with one number and an optional pointer (unused arguments 0, as the kernel requires)."""
    if _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(argument), pointer, None, None) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def install_signal_filter() -> bool:
    """A second seccomp filter for a runner without a PID namespace of its own: signals only to itself.

    In its own PID namespace a runner sees no other process; without one (a GPU runner) it could
    otherwise kill the fork server, its worker or another runner of the same user. Built here, in the
    runner, because the rule names the runner's own pid; filters stack, so this only narrows the first.
    """
    if seccomp is None:
        return False
    me = os.getpid()
    filt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        filt.add_rule(seccomp.ERRNO(errno.EPERM), name, seccomp.Arg(0, seccomp.NE, me))
    for name in ("tkill", "pidfd_send_signal"):  # a thread id alone, or a pidfd (pidfd_open is denied anyway)
        filt.add_rule(seccomp.ERRNO(errno.EPERM), name)
    filt.load()
    return True


def redirect_stdio() -> None:
    """fd 0-2 to pipes of the runner's own: prints are captured by the collector; C-level chatter goes
    nowhere (the read end is closed: a write fails with EPIPE, which Python ignores), and stdin reads EOF.

    Not /dev/null: that inode is the host's, shared by every runner, and byte-range locks on it carried
    16 bytes from one runner to another running beside it. A runner's root is an empty directory, so it
    has no /dev at all; what a GPU runner's driver opened before the jail is closed to locks by seccomp.
    """
    stdin_read, stdin_write = os.pipe()
    out_read, out_write = os.pipe()
    os.close(stdin_write)
    os.close(out_read)
    os.dup2(stdin_read, 0)
    os.dup2(out_write, 1)
    os.dup2(out_write, 2)
    for fd in (stdin_read, out_write):
        if fd > 2:
            os.close(fd)


def close_other_fds(keep: int) -> None:
    """Close every fd above 2 but ``keep``: two close_range(2) calls, no listing of /proc/self/fd (whose
    strings and loop cost a fresh runner ~30 copy-on-write faults)."""
    os.closerange(3, keep)
    os.closerange(keep + 1, 2**31 - 1)


def lock_down(
    workdir: str, userns: bool, threads_allowed: bool, *, own_pidns: bool = True, runner_uid: int = RUNNER_UID_BASE
) -> dict[str, Any]:
    """The last steps before untrusted code: empty root directory, an unprivileged uid of its own where
    we are root (in a user namespace with its map, or real), static limits, seccomp (and, without a PID
    namespace of its own, signals confined to itself)."""
    tasks = task_count() if threads_allowed else 0  # /proc is gone after chroot (a CPU runner needs no count)
    chrooted = enter_directory(workdir)
    if not own_pidns:  # the other runners can see it: they must not read it
        set_undumpable()
    dropped = drop_privileges(runner_uid)
    static_limits(threads_allowed, tasks if dropped else None)
    locked: dict[str, Any] = {"chroot": chrooted, "seccomp": install_seccomp(), "uid": os.geteuid()}
    locked["uid_dropped"] = dropped
    locked["signals_confined"] = own_pidns or (locked["seccomp"] and install_signal_filter())
    if SECCOMP_ERROR:
        locked["seccomp_error"] = SECCOMP_ERROR
    return locked
