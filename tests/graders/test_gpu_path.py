"""The GPU path's two root causes and its promises, checked on a CPU (``test_gpu.py`` runs it on a GPU).

Measured on an H100: (1) the zygote's CPU warm-up armed torch's fork poison, so every runner failed with
"Cannot re-initialize CUDA in forked subprocess"; (2) cuInit fails with error 304 inside user or PID
namespaces. These tests fail on either cause, and on a silent CPU fallback or a slow start failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from graders.sandbox import SandboxPool, gpu, jail
from graders.sandbox.forkserver import PROJECT_ROOT

DOUBLE = "def solution(x):\n    return x * 2\n"

# Runs a fork server's preparation with torch's CUDA entry points recording their calls, then forks and
# asks the child whether torch thinks it is in a bad fork. On a CUDA build that answer is torch's own
# (its C++ registers a pthread_atfork handler in _cuda_getDeviceCount and _cuda_init). On a CPU build
# those functions do not exist, so the script stands in for them: the Python entry points that reach them
# on a CUDA build (is_available, device_count, init, _lazy_init) register the same at-fork handler, and
# torch reports CUDA as its build's accelerator, as a CUDA build does (optimizers ask it whether a device
# is available). Prints {"calls": [...], "child_in_bad_fork": bool, "simulated": bool, "restored": bool,
# "warmed": bool}: whether torch.cuda is as it was after preparation, and whether the warm-up ran.
PREPARATION = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import torch

calls = []
state = {"armed": False, "bad": False}
simulated = not torch.backends.cuda.is_built()
ARMING = ("is_available", "device_count", "init", "_lazy_init")

def arm():
    if not state["armed"]:
        state["armed"] = True
        os.register_at_fork(after_in_child=lambda: state.__setitem__("bad", True))

if simulated:
    torch._C._accelerator_getAccelerator = lambda: torch.device("cuda")
    torch.cuda._is_in_bad_fork = lambda: state["bad"]

recorders = {}

def record(name):
    original = getattr(torch.cuda, name)
    def recorder(*args, **kwargs):
        calls.append(name)
        if simulated and name in ARMING:
            arm()
        return original(*args, **kwargs)
    setattr(torch.cuda, name, recorder)
    recorders[name] = recorder

for name in (*ARMING, "current_device", "get_device_properties", "mem_get_info", "synchronize",
             "set_per_process_memory_fraction", "empty_cache", "manual_seed_all"):
    record(name)

from graders.sandbox import zygote
zygote.prepare(sys.argv[2])
restored = all(getattr(torch.cuda, name) is recorder for name, recorder in recorders.items())
warmed = "torch._dynamo" in sys.modules  # the warm-up's lazy imports (an optimizer's) happened here
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write_end, b"1" if torch.cuda._is_in_bad_fork() else b"0")
    os._exit(0)
os.waitpid(pid, 0)
child_in_bad_fork = os.read(read_end, 1) == b"1"
print(json.dumps({"calls": calls, "child_in_bad_fork": child_in_bad_fork, "simulated": simulated,
                  "restored": restored, "warmed": warmed}))
"""
ARMING = {"is_available", "device_count", "init", "_lazy_init"}


def prepared(device: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", PREPARATION, PROJECT_ROOT, device],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=jail.process_env("cuda"),  # what the fork server gets: a clean environment
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.sandbox
def test_it_prepares_a_cuda_fork_server_without_calling_into_cuda() -> None:
    """It warms up on the CPU all the same (the lazy imports are shared with every runner), while torch.cuda
    answers for the driver, and leaves torch.cuda as it found it."""
    report = prepared("cuda")
    assert not ARMING & set(report["calls"]), report
    assert report["child_in_bad_fork"] is False, report
    assert report["restored"] is True and report["warmed"] is True, report


@pytest.mark.sandbox
def test_the_instrument_sees_the_cpu_warm_up_arm_the_fork_poison() -> None:
    """The control: the CPU fork server's warm-up (an Adam step asks torch.cuda.is_available()) does arm
    it, which is why a GPU pool has a fork server of its own."""
    report = prepared("cpu")
    assert "is_available" in report["calls"], report
    assert report["child_in_bad_fork"] is True, report


def test_the_cuda_recipe_is_a_network_namespace_alone() -> None:
    assert [flags for flags, _ in jail.NAMESPACE_RECIPES["cuda"]] == [jail.CLONE_NEWNET]
    assert all(not flags & (jail.CLONE_NEWUSER | jail.CLONE_NEWPID) for flags, _ in jail.NAMESPACE_RECIPES["cuda"])
    assert jail.NAMESPACE_RECIPES["cpu"][0][0] == jail.CLONE_NEWUSER | jail.CLONE_NEWNET | jail.CLONE_NEWPID


def _namespaces(pid: int | str) -> dict[str, str]:
    return {ns: os.readlink(f"/proc/{pid}/ns/{ns}") for ns in ("user", "pid", "net", "ipc")}


def _runner_pids(pool: SandboxPool) -> list[int]:
    """The zygote's children (the launcher's child is the zygote): the warm runners, by host pid."""
    assert pool.fork_server.process is not None
    launcher = pool.fork_server.process.pid
    zygotes = Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()
    return [int(p) for z in zygotes for p in Path(f"/proc/{z}/task/{z}/children").read_text().split()]


@pytest.fixture(scope="module")
def gpu_pool_without_cuda() -> Iterator[SandboxPool]:
    """A GPU pool whose runners cannot get CUDA: here because this torch has none, on a GPU host because
    the parent hides every device from them (``CUDA_VISIBLE_DEVICES`` is passed through)."""
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    try:
        pool = SandboxPool(size=1, device="cuda", host_gpu=True)
    finally:
        if before is None:
            del os.environ["CUDA_VISIBLE_DEVICES"]
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before
    with pool:
        pool.warm()
        yield pool


@pytest.mark.sandbox
def test_cuda_runners_get_the_documented_namespaces(gpu_pool_without_cuda: SandboxPool) -> None:
    ours = _namespaces("self")
    gpu_pool_without_cuda.warm()  # a runner is ready (another test may have just used one)
    runners = _runner_pids(gpu_pool_without_cuda)
    assert runners
    for pid in runners:
        theirs = _namespaces(pid)
        assert theirs["user"] == ours["user"] and theirs["pid"] == ours["pid"], "CUDA fails in these"
        assert theirs["net"] != ours["net"]
        if gpu_pool_without_cuda.isolation["ipcns"]:
            assert theirs["ipc"] != ours["ipc"]


@pytest.mark.sandbox
def test_a_gpu_pool_whose_runners_lack_cuda_refuses_jobs_and_says_why(gpu_pool_without_cuda: SandboxPool) -> None:
    result = gpu_pool_without_cuda.run(DOUBLE, "solution", [(torch.ones(2),)])
    assert result.status == "internal_error" and "the GPU sandbox cannot use CUDA: " in result.message
    reason = "built without CUDA" if not torch.backends.cuda.is_built() else "No CUDA GPUs are available"
    assert reason in result.message
    health = gpu_pool_without_cuda.health()
    assert health["state"] == "degraded" and health["device"] == "cuda"
    assert health["error"].startswith("CUDA is not available in the sandbox runners")
    isolation = health["isolation"]
    assert (isolation["userns"], isolation["pidns"], isolation["netns"]) == (False, False, True)
    assert isolation["seccomp"] is True and isolation["signals_confined"] is True
    if os.geteuid() == 0:  # a root fork server without a user namespace: chroot, then a uid of its own
        assert isolation["chroot"] is True and isolation["uid_dropped"] is True
        assert jail.RUNNER_UID_BASE < isolation["uid"] < jail.RUNNER_UID_BASE + jail.RUNNER_UID_COUNT


@pytest.mark.sandbox
def test_a_cuda_pool_on_a_host_without_a_gpu_is_a_cpu_pool_and_says_so() -> None:
    with SandboxPool(size=1, device="cuda", host_gpu=False) as pool:
        result = pool.run(DOUBLE, "solution", [(torch.ones(2),)])
        health = pool.health()
    assert result.status == "ok" and result.device == "cpu"
    assert (health["state"], health["device"], health["requested"]) == ("ok", "cpu", "cuda")
    assert "no GPU on this host" in health["note"]


@pytest.mark.sandbox
def test_it_fails_fast_when_the_fork_server_cannot_import_a_module(tmp_path: Path) -> None:
    """Like the GPU host, where packages reachable only through PYTHONPATH are missing (the fork server
    starts with -I and a clean environment): an interpreter without numpy."""
    venv.create(tmp_path / "bare", with_pip=False)
    started = time.monotonic()
    with SandboxPool(size=1, python=str(tmp_path / "bare" / "bin" / "python")) as pool:
        first = pool.run(DOUBLE, "solution", [(torch.ones(2),)])
        took = time.monotonic() - started
        again = pool.run(DOUBLE, "solution", [(torch.ones(2),)])
        health = pool.health()
    assert took < 10, took
    for result in (first, again):
        assert result.status == "internal_error"
        assert result.message == "the sandbox fork server could not start: ModuleNotFoundError: No module named 'numpy'"
    assert health["state"] == "failed" and "No module named 'numpy'" in health["error"]


@pytest.mark.sandbox
def test_a_cpu_fork_server_and_its_runners_see_no_gpu() -> None:
    with SandboxPool(size=1) as pool:
        pool.warm()
        assert pool.fork_server.process is not None
        environ = Path(f"/proc/{pool.fork_server.process.pid}/environ").read_bytes().split(b"\0")
    assert b"CUDA_VISIBLE_DEVICES=" in environ
    assert not any(entry.startswith(b"SECRET_KEY") for entry in environ)


def test_the_gpu_plan_keeps_two_runners_per_core_in_creation_as_the_gpu_memory_allows() -> None:
    h100 = gpu.plan(16, 81559, env={})
    assert (h100.size, h100.concurrency, h100.memory_mb) == (32, 32, 1024)
    small = gpu.plan(16, 8192, env={})  # 8 GiB: 0.8 * 8192 // (1024 + 600) = 4 runners
    assert (small.size, small.concurrency) == (4, 4)
    unknown = gpu.plan(4, None, env={})
    assert (unknown.size, unknown.concurrency) == (8, 8)


def test_the_gpu_plan_takes_the_operators_figures() -> None:
    env = {"SANDBOX_GPU_POOL_SIZE": "40", "SANDBOX_GPU_SPAWN_CONCURRENCY": "12", "SANDBOX_GPU_MEMORY_MB": "512"}
    plan = gpu.plan(16, 8192, env=env)
    assert (plan.size, plan.concurrency, plan.memory_mb) == (40, 12, 512)  # an explicit size is not capped


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SANDBOX_GPU_POOL_SIZE", "many", "must be an integer"),
        ("SANDBOX_GPU_POOL_SIZE", "0", "must be at least 1"),
        ("SANDBOX_GPU_SPAWN_CONCURRENCY", "-2", "must be at least 1"),
        ("SANDBOX_GPU_MEMORY_MB", "12.5", "must be an integer"),
        ("SANDBOX_GPU_MEMORY_MB", "8", "must be at least 64"),
    ],
)
def test_the_gpu_plan_refuses_a_malformed_figure(name: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gpu.plan(16, None, env={name: value})


def test_it_refuses_an_unknown_device() -> None:
    with pytest.raises(ValueError, match="device must be"):
        SandboxPool(device="tpu")


def test_the_gpu_environment_carries_the_parents_gpu_choice_and_the_mps_cap() -> None:
    parent = {"CUDA_VISIBLE_DEVICES": "GPU-1234", "SECRET_KEY": "never-passed", "PYTHONPATH": "/opt/extra"}
    extra = gpu.runner_environment(256, parent)
    assert extra == {"CUDA_VISIBLE_DEVICES": "GPU-1234", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=256M"}
    env = jail.process_env("cuda", extra)
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-1234" and env["CUDA_MODULE_LOADING"] == "LAZY"
    assert "SECRET_KEY" not in env and "PYTHONPATH" not in env
    assert jail.process_env("cpu", extra)["CUDA_VISIBLE_DEVICES"] == ""  # a CPU fork server ignores GPU extras


def test_a_process_that_holds_a_pool_is_not_readable_by_its_user() -> None:
    """Its memory holds references and secrets; a runner without chroot runs as the same user."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from graders.sandbox import SandboxPool, jail\n"
        "before = jail.is_dumpable()\n"
        "pool = SandboxPool(size=1, refill=False)\n"
        "print(before, jail.is_dumpable())\n"
        "pool.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", script, PROJECT_ROOT], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]
