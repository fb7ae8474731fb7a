"""The GPU path on a real GPU: the four cuda drills, the attack suite on GPU runners, bench/gpu.py.

Skipped on a host without an NVIDIA GPU (no /dev/nvidiactl). On a host with one these must pass, so a
GPU pool whose runners cannot get CUDA fails here instead of grading on the CPU. Needs no Django:
``scripts/gpu-proof.sh`` runs it with ``--noconftest`` on a GPU host with only torch and the sandbox's
own wheels.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from graders.sandbox import SandboxPool, gpu
from tests.graders.attacks import ATTACKS

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(not gpu.host_has_gpu(), reason="needs an NVIDIA GPU (no /dev/nvidiactl)"),
]

REPO = Path(__file__).resolve().parents[2]
CUDA_DRILLS = ("leaf-on-device", "model-to-device", "tensor-device-index", "to-device-and-back")


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(device="cuda") as p:
        p.warm()
        yield p


@pytest.fixture(scope="module")
def unguarded_pool() -> Iterator[SandboxPool]:
    """Layers 1 and 2 off, as the CPU suite runs its raw attacks: code that owns a GPU runner outright."""
    with SandboxPool(size=1, device="cuda", unguarded=True) as p:
        p.warm()
        yield p


def test_its_runners_have_cuda_in_the_documented_jail(pool: SandboxPool) -> None:
    health = pool.health()
    assert health["state"] == "ok", health
    isolation = health["isolation"]
    assert isolation["device"] == "cuda"
    assert (isolation["userns"], isolation["pidns"], isolation["netns"]) == (False, False, True)
    assert isolation["seccomp"] is True and isolation["signals_confined"] is True
    if os.geteuid() == 0:
        assert isolation["chroot"] is True and isolation["uid_dropped"] is True
    assert health["gpu"]["cap_mb"] == pool.gpu_memory_mb


def test_it_runs_on_the_gpu_and_returns_cpu_tensors(pool: SandboxPool) -> None:
    code = "import torch\n\ndef solution(x):\n    assert x.is_cuda\n    return x @ x.T\n"
    result = pool.run(code, "solution", [(torch.ones(4, 4),)])
    assert result.status == "ok" and result.device == "cuda", result
    assert result.cases[0].value.device.type == "cpu"
    assert torch.equal(result.cases[0].value, torch.full((4, 4), 4.0))


def test_a_submission_cannot_allocate_past_its_gpu_memory_cap(pool: SandboxPool) -> None:
    """The caching allocator's cap holds (the submission cannot reach torch.cuda to lift it)."""
    mb = pool.gpu_memory_mb * 2
    code = (
        "import torch\n\ndef solution(x):\n"
        f"    return torch.empty({mb} * 1024 * 1024, dtype=torch.uint8, device=x.device).sum()\n"
    )
    result = pool.run(code, "solution", [(torch.ones(1),)])
    assert result.status in ("memory_limit", "runtime_error") or not result.cases[0].ok, result
    after = pool.run("def solution(x):\n    return x * 2\n", "solution", [(torch.ones(2),)])
    assert after.status == "ok" and after.device == "cuda"


@pytest.mark.parametrize("slug", CUDA_DRILLS)
def test_it_grades_each_cuda_drill_on_the_gpu(slug: str, pool: SandboxPool) -> None:
    """The reference and alternatives are accepted, every wrong answer (the GPU-only ones too) refused,
    every verdict on cuda: never internal_error on a working GPU."""
    from graders.drills import DRILLS_DIR, load_drills
    from graders.drills.grading import ReferenceCache, grade

    drill, cache = load_drills(DRILLS_DIR)[slug], ReferenceCache()
    known = tomllib.loads((REPO / "tests" / "graders" / "solutions" / f"{slug}.toml").read_text(encoding="utf-8"))

    def verdict(code: str) -> dict[str, Any]:
        graded = dict(grade(drill, code, seed=0, runner=pool, cache=cache))
        assert graded["device"] == "cuda" and graded["status"] != "internal_error", graded
        return graded

    assert verdict(drill.reference)["status"] == "accepted"
    for wrong in known["wrong"] + known.get("wrong_on_gpu", []):
        assert verdict(wrong["code"])["status"] in ("wrong_answer", "runtime_error"), wrong["why"]
    for alternative in known["alternative"]:
        assert verdict(alternative["code"])["status"] == "accepted"


@pytest.fixture(scope="module")
def attack_env() -> Iterator[Any]:
    from tests.graders.test_sandbox_attacks import prepare

    env = prepare()
    yield env
    os.unlink(env.canary_file)
    os.environ.pop(env.canary_env, None)


@pytest.mark.parametrize("attack", ATTACKS, ids=[f"{a.category}-{a.name}" for a in ATTACKS])
def test_it_contains_each_attack_on_gpu_runners(
    pool: SandboxPool, unguarded_pool: SandboxPool, attack_env: Any, attack: Any
) -> None:
    """The attack suite's own check (tests/graders/test_sandbox_attacks.py), on GPU runners; raw attacks
    on runners with layers 1 and 2 off, as on the CPU. ``bench/gpu.py --proof`` runs the same checks."""
    from tests.graders.test_sandbox_attacks import check_contained as contained

    contained(unguarded_pool if attack.raw else pool, attack_env, attack)


def test_bench_gpu_prints_its_figures() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "gpu.py"), "--seconds", "5", "--warm-runs", "10", "--cold", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for line in ("pool.run, runner already warm", "cold: fresh process tree", "verdicts/s"):
        assert line in done.stdout, done.stdout
