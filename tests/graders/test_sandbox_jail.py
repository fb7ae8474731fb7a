"""Layer 3 on its own: plain, unrestricted Python inside the jail, as if layers 1 and 2 had both failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from graders.sandbox import jail
from graders.sandbox.forkserver import PROJECT_ROOT

pytestmark = pytest.mark.sandbox

PROBE = r"""
import json, os, signal, socket, sys
sys.path.insert(0, sys.argv[1])
from graders.sandbox import jail
import torch

workdir, out_fd, device, outsider = sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
if os.fork():  # like the zygote: the warden is a single-threaded fork of a torch-loaded process
    os.wait()
    sys.exit(0)
iso = jail.enter_namespaces(device)
if os.fork():
    os.wait()
    os._exit(0)
jail.close_other_fds(out_fd)
jail.redirect_stdio()
os.environ.clear()
os.environ.update(jail.process_env(device))
in_use = jail.memory_in_use()
locked = jail.lock_down(workdir, iso["userns"], threads_allowed=device != "cpu", own_pidns=iso["pidns"])
jail.job_limits(2, 1024, cuda=False, in_use=in_use)
report = {"isolation": iso, **locked, "pid": os.getpid(), "env": dict(os.environ), "dumpable": jail.is_dumpable()}

def attempt(name, fn):
    try:
        report[name] = "allowed: " + repr(fn())[:200]
    except BaseException as exc:
        report[name] = "blocked: " + type(exc).__name__

attempt("read_passwd", lambda: open("/etc/passwd").read())
attempt("read_settings", lambda: open(sys.argv[1] + "/quizsite/settings.py").read())
attempt("read_proc_environ", lambda: open("/proc/1/environ", "rb").read())
attempt("write_file", lambda: open("sbx-jail-probe", "w").write("x" * 10) and os.fsync(0))
attempt("socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt("fork", os.fork)
attempt("exec", lambda: os.execv("/bin/sh", ["sh", "-c", "true"]))
attempt("chroot_escape", lambda: os.chroot(".."))
def refuse(exc):
    raise exc

attempt("unshare", lambda: jail.unshare(jail.CLONE_NEWUSER) or refuse(PermissionError()))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def ipc(call):
    result = call()
    if result == -1:
        raise OSError(ctypes.get_errno(), "refused")
    return result
attempt("sysv_shm", lambda: ipc(lambda: libc.shmget(0, 4096, 0o1600)))  # IPC_PRIVATE | IPC_CREAT
attempt("sysv_msg", lambda: ipc(lambda: libc.msgget(0x51c0de, 0o1600)))
attempt("sysv_sem", lambda: ipc(lambda: libc.semget(0x51c0de, 1, 0o1600)))
attempt("mkdir_in_own_root", lambda: os.mkdir("sub"))
attempt("chmod_own_root", lambda: os.chmod(".", 0o755))
attempt("create_empty_file", lambda: os.close(os.open("empty", os.O_CREAT | os.O_WRONLY, 0o600)))
attempt("xattr_on_own_root", lambda: os.setxattr(".", "user.note", b"x"))
attempt("posix_mq", lambda: ipc(lambda: libc.mq_open(b"/quizsite-probe", 0o100 | 0o2, 0o600, None)))
attempt("signal_outsider", lambda: os.kill(outsider, 0))  # the test's own process: no signal may reach it
attempt("signal_itself", lambda: os.kill(os.getpid(), 0))
# Host resources and identity (issue 24): tasks, locks on shared inodes, AIO, write-back, host name and load.
import fcntl, stat, struct, threading
attempt("thread", lambda: threading.Thread(target=lambda: None).start())
attempt("flock_stdin", lambda: fcntl.flock(0, fcntl.LOCK_EX | fcntl.LOCK_NB))
attempt("fcntl_lock_stdout", lambda: fcntl.lockf(1, fcntl.LOCK_EX | fcntl.LOCK_NB, 16, 0))
attempt("ofd_lock_stderr", lambda: fcntl.fcntl(2, 37, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 16, 0)))
attempt("sync", lambda: ipc(lambda: libc.syscall(162)))  # SYS_sync on x86_64
attempt("syncfs", lambda: ipc(lambda: libc.syncfs(0)))
attempt("io_setup", lambda: ipc(lambda: libc.syscall(206, 8, ctypes.byref(ctypes.c_ulong(0)))))
attempt("sysinfo", lambda: ipc(lambda: libc.sysinfo(ctypes.create_string_buffer(128))))
attempt("sethostname", lambda: ipc(lambda: libc.sethostname(b"pwned", 5)))
# Per-user budgets (issue 36): real-time signals queued with data or by tgkill, POSIX timers, pipe buffers.
signal.pthread_sigmask(signal.SIG_BLOCK, {40})  # held pending, so each one queued would count
info = ctypes.create_string_buffer(128)
attempt("rt_sigqueueinfo", lambda: ipc(lambda: libc.syscall(129, os.getpid(), 40, info)))
attempt("rt_tgsigqueueinfo", lambda: ipc(lambda: libc.syscall(297, os.getpid(), threading.get_native_id(), 40, info)))
attempt("tgkill_realtime", lambda: ipc(lambda: libc.syscall(234, os.getpid(), threading.get_native_id(), 40)))
attempt("timer_create", lambda: ipc(lambda: libc.syscall(222, 1, None, ctypes.byref(ctypes.c_int(0)))))
attempt("pipe_size", lambda: fcntl.fcntl(os.pipe()[1], 1031, 1 << 20))
import resource
report["zero_limits"] = {name: resource.getrlimit(getattr(resource, name)) for name in jail.ZERO_LIMITS}
report["stdio_is_a_pipe"] = all(stat.S_ISFIFO(os.fstat(fd).st_mode) for fd in (0, 1, 2))
report["nodename"] = os.uname().nodename
report["nproc"] = __import__("resource").getrlimit(__import__("resource").RLIMIT_NPROC)[0]
report["env_has_secret"] = any("SECRET" in k for k in os.environ)
report["torch_works"] = float((torch.ones(3) * 2).sum())
os.write(out_fd, json.dumps(report).encode())
"""


IPC = ("sysv_shm", "sysv_msg", "sysv_sem", "posix_mq")  # channels between submissions
# A runner's own root stays as the fork server made it: nothing to walk or repair after it.
OWN_ROOT = ("mkdir_in_own_root", "chmod_own_root", "create_empty_file", "xattr_on_own_root")
HOST = ("flock_stdin", "fcntl_lock_stdout", "ofd_lock_stderr", "sync", "syncfs", "io_setup", "sysinfo", "sethostname")
# Per-user budgets a runner shares with host root (through its user namespace) and with other runners.
BUDGETS = ("rt_sigqueueinfo", "rt_tgsigqueueinfo", "tgkill_realtime", "timer_create", "pipe_size")


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_it_blocks_files_network_processes_and_ipc_even_for_unrestricted_code(device: str) -> None:
    """Both recipes: a CPU runner's (user, network, PID namespaces) and a GPU runner's (network only, the
    rest made up by chroot as root, an unprivileged uid and signals confined by seccomp)."""
    workdir = tempfile.mkdtemp(prefix="quizsite-jail-test-")
    os.chmod(workdir, 0o555)  # as the zygote does for each runner
    try:
        _probe(workdir, device)
    finally:
        os.chmod(workdir, 0o755)
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)


def _probe(workdir: str, device: str) -> None:
    read_end, write_end = os.pipe()
    env = {**os.environ, "SECRET_KEY": "jail-probe-secret"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, PROJECT_ROOT, workdir, str(write_end), device, str(os.getpid())],
        pass_fds=[write_end],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        raw = fh.read()
    assert raw, proc.stderr.decode()[-2000:]
    report = json.loads(raw)

    assert report["seccomp"] is True
    blocked = ("write_file", "socket", "fork", "exec", "chroot_escape", "unshare", "signal_outsider", *IPC, *OWN_ROOT)
    blocked += HOST + BUDGETS
    if device == "cpu":
        blocked += ("thread",)  # a CPU runner starts none; a GPU runner a bounded few (RLIMIT_NPROC)
    for name in blocked:
        assert report[name].startswith("blocked"), (name, report[name])
    assert report["signal_itself"].startswith("allowed")
    assert report["zero_limits"] == {name: [0, 0] for name in jail.ZERO_LIMITS}, report["zero_limits"]
    assert report["signals_confined"] is True
    if report["isolation"]["userns"] or os.geteuid() == 0:  # chroot needs root, in a user namespace or not
        assert report["chroot"] is True
        for name in ("read_passwd", "read_settings", "read_proc_environ"):
            assert report[name].startswith("blocked"), (name, report[name])
    if os.geteuid() == 0:  # root, real or in a user namespace with its map: a uid of the runners' own
        assert report["uid_dropped"] is True and report["uid"] == jail.RUNNER_UID_BASE, report
        assert report["nproc"] == (0 if device == "cpu" else report["nproc"]) and report["nproc"] < 100
    assert report["stdio_is_a_pipe"] is True  # not the host's /dev/null, whose locks every runner shares
    if report["isolation"]["utsns"]:
        assert report["nodename"] == "sandbox"
    assert report["nodename"] != os.uname().nodename
    if report["isolation"]["pidns"]:
        assert report["pid"] == 1
    else:  # the other runners see it: its /proc entries are root's
        assert report["dumpable"] is False
    if device == "cpu":
        assert report["env"]["CUDA_VISIBLE_DEVICES"] == ""  # a CPU runner never sees a GPU
    else:  # the GPU recipe: CUDA's init fails inside user or PID namespaces (error 304, measured on an H100)
        assert (report["isolation"]["userns"], report["isolation"]["pidns"]) == (False, False)
        assert "CUDA_VISIBLE_DEVICES" not in report["env"]
    assert report["env_has_secret"] is False
    assert report["torch_works"] == 6.0
    assert os.listdir(workdir) == [], report


GPU_MEMORY_PROBE = r"""
import ctypes, json, sys
sys.path.insert(0, sys.argv[1])
from graders.sandbox import jail
import torch

# What CUDA does at context creation: reserve ~18 GB of address space, inaccessible until it maps memory
# there (PROT_NONE; MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE).
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
reservation = libc.mmap(None, 20 * 1024 ** 3, 0, 0x02 | 0x20 | 0x4000, -1, 0)
assert reservation not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
before = jail.memory_in_use()
jail.job_limits(2, 256, cuda=True, in_use=before)
report = {"reserved_counted": before[1] > 10 * 1024 ** 3}
def attempt(name, fn):
    try:
        fn()
        report[name] = "allowed"
    except MemoryError:
        report[name] = "blocked: MemoryError"
    except RuntimeError as exc:
        report[name] = "blocked: " + str(exc)[:300]
attempt("bytes_64mb", lambda: bytearray(64 * 1024 ** 2))
attempt("tensor_64mb", lambda: torch.ones(16 * 1024 ** 2))
attempt("bytes_1gb", lambda: bytearray(1024 ** 3))
attempt("tensor_1gb", lambda: torch.ones(256 * 1024 ** 2))
attempt("growing", lambda: [bytearray(10 * 1024 ** 2) for _ in range(200)])
print(json.dumps(report))
"""


def test_a_gpu_runners_host_memory_is_capped_by_its_data_size_not_its_address_space() -> None:
    """A GPU runner keeps 64 GiB of address space for CUDA's reservations; RLIMIT_DATA caps what a job fills."""
    done = subprocess.run(
        [sys.executable, "-c", GPU_MEMORY_PROBE, PROJECT_ROOT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {
        "reserved_counted": False,
        "bytes_64mb": "allowed",
        "tensor_64mb": "allowed",
        "bytes_1gb": "blocked: MemoryError",
        "tensor_1gb": report["tensor_1gb"],
        "growing": "blocked: MemoryError",
    }, report
    assert report["tensor_1gb"].startswith("blocked") and "can't allocate memory" in report["tensor_1gb"]


SECCOMP_PROBE = r"""
import ctypes, errno, json, os, socket, sys, threading
sys.path.insert(0, sys.argv[1])
from graders.sandbox import jail

libc = ctypes.CDLL(None, use_errno=True)


def outcome(fn):
    try:
        fn()
        return "allowed"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))


def raw(number, *args):  # a system call glibc would not make itself (clone3 with a bogus size)
    if libc.syscall(number, *args) == -1:
        raise OSError(ctypes.get_errno(), "refused")


def report(load):
    load()
    status = dict(line.split(":\t") for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
    thread = threading.Thread(target=lambda: None)
    return {
        "no_new_privs": status["NoNewPrivs"].strip(),
        "seccomp": status["Seccomp"].strip(),
        "filters": status["Seccomp_filters"].strip(),
        "socket": outcome(lambda: socket.socket()),
        "fork": outcome(os.fork),
        "create": outcome(lambda: os.open(sys.argv[2] + "/new", os.O_CREAT | os.O_WRONLY, 0o600)),
        "mkdir": outcome(lambda: os.mkdir(sys.argv[2] + "/dir")),
        "unshare": outcome(lambda: raw(272, 0x20000)),
        "clone3": outcome(lambda: raw(435, 0, 0)),
        "read": outcome(lambda: open("/proc/self/status").read()),
        "thread": outcome(lambda: (thread.start(), thread.join())),
    }


results = []
for load in (lambda: jail.seccomp_filter().load(), jail.install_seccomp):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, json.dumps(report(load)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    results.append(json.loads(os.read(read, 65536)))
print(json.dumps(results))
"""


def test_it_loads_the_program_libseccomp_would_load(tmp_path: Path) -> None:
    """``install_seccomp`` hands the kernel the program libseccomp generated once; loaded by libseccomp's own
    ``load()`` instead, the same calls are refused with the same errors, with no_new_privs set both ways."""
    done = subprocess.run(
        [sys.executable, "-c", SECCOMP_PROBE, PROJECT_ROOT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    by_libseccomp, ours = json.loads(done.stdout.strip().splitlines()[-1])
    assert ours == by_libseccomp
    assert ours["no_new_privs"] == "1" and ours["seccomp"] == "2" and ours["filters"] == "1"
    assert (ours["socket"], ours["fork"], ours["create"], ours["mkdir"], ours["unshare"]) == ("EPERM",) * 5
    assert (ours["clone3"], ours["read"], ours["thread"]) == ("ENOSYS", "allowed", "allowed")
    assert os.listdir(tmp_path) == []


THREADS = """
import os, threading, time

def solution(x):
    started = 0
    try:
        for _ in range(300):
            threading.Thread(target=time.sleep, args=(1.5,), daemon=True).start()
            started += 1
    except RuntimeError:
        pass
    time.sleep(1.0)
    return started
"""


OWN_UIDS = jail.RUNNER_UID_BASE + jail.RUNNER_UID_COUNT  # a range of this test's own: other pools run beside it


def _runner_tasks() -> int:
    """Tasks on the host owned by this test's runners (the machine is shared: other tasks come and go)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        uid = int(fields.get("Uid", "0").split()[0])
        if OWN_UIDS <= uid < OWN_UIDS + jail.RUNNER_UID_COUNT:
            total += int(fields.get("Threads", "1"))
    return total


def test_ten_runners_starting_threads_at_once_leave_the_hosts_task_count_bounded() -> None:
    """Each runner has a uid of its own, so RLIMIT_NPROC bounds it alone: a CPU runner starts no thread.

    Unbounded, one runner started 3,000 threads in 0.04 s (pid_max is 32,768); here each tries 300 (so
    the control stays harmless to a shared machine) and the runners' tasks are sampled while they run.
    """
    import threading
    import time

    import torch

    from graders.sandbox import SandboxPool

    with SandboxPool(size=10, unguarded=True, runner_uid=OWN_UIDS) as pool:
        deadline = time.monotonic() + 120
        while len(pool._ready) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        results: list = []
        jobs = [
            threading.Thread(target=lambda: results.append(pool.run(THREADS, "solution", [(torch.ones(1),)])))
            for _ in range(10)
        ]
        for job in jobs:
            job.start()
        peak = 0
        while any(job.is_alive() for job in jobs):
            peak = max(peak, _runner_tasks())
            time.sleep(0.02)
        for job in jobs:
            job.join()
    assert [r.status for r in results] == ["ok"] * 10, [r.message for r in results]
    assert [r.cases[0].value for r in results] == [0] * 10
    assert 0 < peak <= 2 * 10 + 4, peak  # one task per runner: the ten running and the ten warm ones behind


def test_a_background_job_runs_at_nice_19_and_a_learners_at_0() -> None:
    """The next batch of fresh seeds' references (``background=True``) yields the CPU to the learners' runners."""
    from graders.sandbox.pool import SandboxPool

    code = "import os\n\ndef solution(x):\n    return os.getpriority(os.PRIO_PROCESS, 0)\n"
    with SandboxPool(size=1, unguarded=True) as pool:  # real builtins: the runner reads its own priority
        learner = pool.run(code, "solution", [(0,)])
        background = pool.run(code, "solution", [(0,)], background=True, reference=True)
    assert learner.status == background.status == "ok", (learner.message, background.message)
    assert (learner.cases[0].value, background.cases[0].value) == (0, 19)


def test_a_runner_cannot_raise_its_own_priority_or_reach_another_process() -> None:
    """Real builtins: a submission may lower its own priority (pid 1 of its namespace is itself), never raise it."""
    from graders.sandbox.pool import SandboxPool

    code = (
        "import os\n\ndef solution(x):\n    out = []\n"
        "    for who, prio in ((0, -5), (1, 19), (0, 0)):\n"
        "        try:\n            os.setpriority(os.PRIO_PROCESS, who, prio)\n            out.append('set')\n"
        "        except OSError as exc:\n            out.append(exc.errno)\n"
        "    return out, os.getpid(), os.getpriority(os.PRIO_PROCESS, 0)\n"
    )
    with SandboxPool(size=1, unguarded=True) as pool:
        result = pool.run(code, "solution", [(0,)])
    assert result.status == "ok", result.message
    assert result.cases[0].value == ([13, "set", 13], 1, 19)  # EACCES both ways up; pid 1 is the runner itself


def _holder(registry: str, uid: int) -> subprocess.Popen[bytes]:
    """Another process (another pool's zygote, say) holding ``uid`` in the registry until it is killed."""
    code = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(sys.argv[2]))\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, registry, str(uid)], stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    return holder


def _lock_holder(registry: int, uid: int) -> int:
    """The pid holding a lock on ``uid``'s byte of the registry, 0 if none (F_GETLK)."""
    import fcntl
    import struct

    asked = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, uid, 1, 0)
    kind, _whence, _start, _length, pid = struct.unpack("hhqqi", fcntl.fcntl(registry, fcntl.F_GETLK, asked))
    return 0 if kind == fcntl.F_UNLCK else pid


def test_a_uid_another_pool_holds_or_this_one_holds_is_never_drawn_again() -> None:
    base = jail.RUNNER_UID_BASE
    with tempfile.TemporaryDirectory() as directory:
        registry = jail.open_uid_registry(directory)
        assert registry >= 0
        holder = _holder(os.path.join(directory, jail.RUNNER_UID_REGISTRY), base + 5)
        try:
            draws = iter([5, 5, 7, 7, 9])
            assert jail.reserve_uid(registry, set(), draw=lambda n: next(draws)) == (base + 7, True)
            assert jail.reserve_uid(registry, {base + 7}, draw=lambda n: next(draws)) == (base + 9, True)
            assert _lock_holder(registry, base + 5) == holder.pid
            jail.release_uid(registry, base + 7)
            assert jail.reserve_uid(registry, {base + 9}, draw=lambda n: 7) == (base + 7, True)
            assert jail.reserve_uid(registry, set(), draw=lambda n: 5, tries=3) == (base + 5, False)  # all refused
        finally:
            holder.kill()
            holder.communicate()
        assert jail.reserve_uid(registry, set(), draw=lambda n: 5) == (base + 5, True)  # its holder died
        os.close(registry)
    assert jail.reserve_uid(-1, set(), draw=lambda n: 3) == (base + 3, False)  # no registry: random only


def test_runners_of_two_pools_have_uids_of_their_own_that_tell_nothing_of_history() -> None:
    """The first runners of two pools once had the same uid (the n-th runner was ``base + n``); now each
    live runner's uid is drawn at random and held in the host's registry while the runner lives."""
    import time

    import torch

    from graders.sandbox import SandboxPool

    code = "import os\n\ndef solution(x):\n    return os.getuid()\n"
    with SandboxPool(size=3, unguarded=True) as first, SandboxPool(size=3, unguarded=True) as second:
        first.warm()
        second.warm()
        deadline = time.monotonic() + 120
        while min(len(first._ready), len(second._ready)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        live = [child.ready["uid"] for pool in (first, second) for child in list(pool._ready)]
        assert all(child.ready["uid_reserved"] is True for pool in (first, second) for child in pool._ready)
        registry = jail.open_uid_registry()
        try:
            holders = {uid: _lock_holder(registry, uid) for uid in live}
        finally:
            os.close(registry)
        ran = [pool.run(code, "solution", [(torch.ones(1),)]) for _ in range(6) for pool in (first, second)]
    uids = [result.cases[0].value for result in ran] + live
    if os.geteuid() != 0:
        pytest.skip("runners keep the worker's uid where nothing can be mapped")
    assert all(jail.RUNNER_UID_BASE <= uid < jail.RUNNER_UID_BASE + jail.RUNNER_UID_COUNT for uid in uids), uids
    assert len(set(live)) == len(live) == 6 and all(holders.values()), holders  # reserved while they live
    assert max(uids) - min(uids) > 1_000_000, uids  # drawn from 268 million, not counted up from the base


def test_two_runners_in_two_pools_pass_no_bits_through_the_pending_signal_count() -> None:
    """The best sender and receiver we have (``tests.graders.attacks.channel``): before issue 36 the receiver
    held ~96,000 signals of host root's budget and read the sender's bits at ~20 bits/s on this 2-core box;
    now it can queue none, and what it reads does not depend on what was sent."""
    from graders.sandbox import SandboxPool
    from tests.graders.attacks.channel import measure

    with SandboxPool(size=1, unguarded=True) as first, SandboxPool(size=1, unguarded=True) as second:
        first.warm()
        second.warm()
        found = measure(first, second, bits=64, slot_ms=10.0)
    assert found["held"] == 0 and found["bits_per_second"] == 0.0, found
