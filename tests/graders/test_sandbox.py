"""The sandbox end to end: real children from a warm pool, and run_once in a cold process."""

from __future__ import annotations

import marshal
import os
import time
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch")

from graders.sandbox import Limits, SandboxPool, run_once  # noqa: E402
from graders.sandbox.child import TWIN_NOT_RUN, invoke  # noqa: E402
from graders.sandbox.exchange import Job, run_job  # noqa: E402
from graders.sandbox.policy import compile_submission  # noqa: E402

pytestmark = pytest.mark.sandbox

DOUBLE = "import torch\n\ndef solution(x):\n    return x * 2\n"


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(size=2) as p:
        p.warm()
        yield p


def test_it_runs_a_correct_function(pool: SandboxPool) -> None:
    result = pool.run(DOUBLE, "solution", [(torch.arange(3.0),), (torch.ones(2, 2),)])
    assert result.status == "ok", result
    assert [c.ok for c in result.cases] == [True, True]
    assert torch.equal(result.cases[0].value, torch.tensor([0.0, 2.0, 4.0]))
    assert type(result.cases[1].value) is torch.Tensor
    assert result.device == "cpu"
    assert result.wall_ms > 0


def test_it_jails_every_child(pool: SandboxPool) -> None:
    info = pool.isolation
    assert info["seccomp"] is True
    assert info["device"] == "cpu"
    if info["userns"]:  # this host allows user namespaces; so must CI
        assert info["chroot"] and info["netns"] and info["pidns"]


def test_every_cpu_runner_rehearses_the_job_path_and_a_submission_starts_as_without_it(pool: SandboxPool) -> None:
    """The rehearsal (``zygote._rehearse``) ran before "ready", and a submission's module body draws the
    random numbers of a generator seeded 0, as in a runner that never rehearsed."""
    code = "import torch\n\nDRAWN = torch.rand(3)\n\ndef solution(x):\n    return DRAWN\n"
    result = pool.run(code, "solution", [(torch.ones(2),)])
    assert result.status == "ok", result
    assert torch.equal(result.cases[0].value, torch.rand(3, generator=torch.Generator().manual_seed(0)))
    assert pool.setup_timings()[-1]["rehearse_ms"] > 0
    assert pool.health()["state"] == "ok", pool.health()


def test_it_runs_an_nn_module_class_entry_point(pool: SandboxPool) -> None:
    code = (
        "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n    def __init__(self, n):\n"
        "        super().__init__()\n        self.fc = nn.Linear(n, 2)\n\n    def forward(self, x):\n"
        "        return torch.relu(self.fc(x))\n"
    )
    cases = [((3,), (torch.ones(4, 3),))]
    result = pool.run(code, "Net", cases)
    assert result.status == "ok", result

    class Net(torch.nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(n, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.fc(x))

    expected = invoke(Net, cases[0], grad=False)  # same seed, same initialisation
    assert torch.allclose(result.cases[0].value, expected.detach())


def test_it_allows_writing_into_tensors(pool: SandboxPool) -> None:
    code = (
        "import torch\n\ndef solution(n):\n    out = torch.zeros(n)\n    for i in range(n):\n"
        "        out[i] = i * i\n    out[0] += 7\n    return out\n"
    )
    result = pool.run(code, "solution", [(4,)])
    assert result.cases[0].value.tolist() == [7.0, 1.0, 4.0, 9.0]


def test_it_preserves_returned_containers_and_scalars(pool: SandboxPool) -> None:
    code = "def solution(x):\n    return (1, 2.5, None, 'a', True, [x], {'k': x.sum().item()})\n"
    result = pool.run(code, "solution", [(torch.ones(2),)])
    value = result.cases[0].value
    assert value[:5] == (1, 2.5, None, "a", True)
    assert torch.equal(value[5][0], torch.ones(2))
    assert value[6] == {"k": 2.0}


def test_it_captures_prints(pool: SandboxPool) -> None:
    result = pool.run("def solution(x):\n    print('hello', x)\n    return x\n", "solution", [(3,)])
    assert result.stdout == "hello 3\n"


def test_it_caps_prints_with_an_output_limit(pool: SandboxPool) -> None:
    code = "def solution(x):\n    for i in range(1000):\n        print('y' * 100)\n    return x\n"
    result = pool.run(code, "solution", [(1,)], limits=Limits(output_bytes=1000))
    assert result.status == "output_limit"
    assert len(result.stdout) == 1000


def test_it_never_returns_what_a_hidden_case_prints(pool: SandboxPool) -> None:
    """The hidden cases run in a second phase: nothing of it but values, ok flags and records comes back."""
    code = "print('loaded')\ndef solution(x):\n    print('input', x)\n    return x\n"
    result = pool.run(code, "solution", [(3,), (5,)], hidden=[(424242,)])
    assert result.status == "ok" and [c.value for c in result.cases] == [3, 5]
    assert result.hidden_status == "ok" and [c.value for c in result.hidden] == [424242]
    assert result.stdout == "loaded\ninput 3\ninput 5\n"
    flood = "def solution(x):\n    while x > 0:\n        print('secret', x)\n    return x\n"
    result = pool.run(flood, "solution", [(0,)], limits=Limits(output_bytes=1000), hidden=[(424242,)])
    assert (result.status, result.hidden_status) == ("ok", "output_limit")
    assert "424242" not in repr(result)


def test_hidden_cases_stay_in_the_parent_when_the_grader_stops_at_the_visible_phase(pool: SandboxPool) -> None:
    """``go_on`` sees the visible phase's result; a no keeps the hidden cases out of the child altogether."""
    code = "def solution(x):\n    return x\n"
    asked: list[list[object]] = []

    def stop(visible: object) -> bool:
        asked.append([c.value for c in visible.cases])
        return False

    result = pool.run(code, "solution", [(3,)], hidden=[(424242,)], go_on=stop)
    assert asked == [[3]] and result.status == "ok" and (result.hidden_status, result.hidden) == ("", [])
    result = pool.run(code, "solution", [(3,)], hidden=[(424242,)], go_on=lambda visible: True)
    assert result.hidden_status == "ok" and [c.value for c in result.hidden] == [424242]
    result = pool.run("def solution(x):\n    return 1 / 0\n", "solution", [(3,)], hidden=[(1,)], go_on=stop)
    assert result.hidden_status == "" and len(asked) == 2  # asked about the error too: the grader decides


def test_its_timings_are_the_visible_phases_however_long_the_hidden_phase_takes(pool: SandboxPool) -> None:
    """A hidden phase made slow on chosen inputs is not in the CPU and wall time the verdict shows."""
    busy = "def solution(x):\n    for i in range(40_000_000 if x > 100 else 0):\n        pass\n    return x\n"
    started = time.monotonic()
    result = pool.run(busy, "solution", [(3,)], hidden=[(424242,)], limits=Limits(cpu_seconds=20, wall_seconds=20))
    took_ms = (time.monotonic() - started) * 1000
    assert result.hidden_status == "ok" and took_ms > 300, took_ms  # the hidden case ran (twice) and took its time
    assert result.wall_ms < took_ms / 4 and result.cpu_ms < took_ms / 4, (result, took_ms)


# The round-3 paths by which hidden inputs came back without any escape; each now ends as one bit per case.
LEAKS = {
    "a tuple whose __len__ raises with the input, in the last encode": (
        "class T(tuple):\n    def __len__(self):\n        raise ValueError(repr(list(self)))\n"
        "def solution(x):\n    return T((x,))\n"
    ),
    "an error whose second line looks like an exception name": (
        "def solution(x):\n    if x > 100:\n        raise ValueError('a\\nKeyError: ' + str(x))\n    return x\n"
    ),
    "an error that starts like out of memory": (
        "def solution(x):\n    if x > 100:\n        raise RuntimeError('out of memory ' + str(x))\n    return x\n"
    ),
    "printing the input, then flooding the output": (
        "def solution(x):\n    if x > 100:\n        print(x)\n        while True:\n            print(x)\n    return x\n"
    ),
}


@pytest.mark.parametrize("code", LEAKS.values(), ids=list(LEAKS))
def test_no_round_3_path_returns_a_hidden_input(pool: SandboxPool, code: str) -> None:
    result = pool.run(code, "solution", [(3,)], hidden=[(424242,), (7,)])
    assert "424242" not in repr(result), result
    assert result.hidden_status in ("ok", "output_limit", "memory_limit", "runtime_error")


def test_a_runner_that_owns_its_process_still_returns_one_message_per_phase(pool: SandboxPool) -> None:
    """Real builtins or not, what the hidden phase sends is decoded as data and reduced by the parent."""
    forged = "def solution(x):\n    return {'message': 'input ' + str(x), 'stdout': str(x)}\n"
    result = pool.run(forged, "solution", [(3,)], hidden=[(424242,)])
    assert result.hidden_status == "ok" and result.stdout == "" and result.message == ""
    assert result.hidden[0].error is None  # its value is compared, never shown (graders.drills.grading)


def test_it_reports_a_runtime_error_with_the_learners_lines(pool: SandboxPool) -> None:
    code = (
        "import torch\n\ndef helper(x):\n    return x / 0 + undefined_name\n\ndef solution(x):\n    return helper(x)\n"
    )
    result = pool.run(code, "solution", [(torch.ones(1),), (torch.ones(2),)])
    assert result.status == "ok"
    error = result.cases[0].error
    assert result.cases[0].ok is False
    assert error.startswith("NameError: name 'undefined_name' is not defined")
    assert "line 7, in solution: return helper(x)" in error
    assert "line 4, in helper" in error
    assert "site-packages" not in error and "graders/sandbox" not in error


def test_it_reports_a_module_body_error(pool: SandboxPool) -> None:
    result = pool.run("x = 1 / 0\ndef solution():\n    return 1\n", "solution", [()])
    assert result.status == "runtime_error"
    assert "ZeroDivisionError" in result.message and "line 1" in result.message


def test_it_returns_gradients_with_grad_true(pool: SandboxPool) -> None:
    code = "def solution(x, w, k):\n    return (x * x * w).sum() * k\n"
    result = pool.run(code, "solution", [(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]), 2)], grad=True)
    value = result.cases[0].value
    assert torch.equal(value["output"], torch.tensor(38.0))
    assert torch.equal(value["grads"][0], torch.tensor([12.0, 32.0]))
    assert torch.equal(value["grads"][1], torch.tensor([2.0, 8.0]))
    assert value["grads"][2] is None
    assert value["output"].requires_grad is False


def test_it_rejects_a_forbidden_import_with_a_clear_message(pool: SandboxPool) -> None:
    result = pool.run("import os\ndef solution():\n    return 1\n", "solution", [()])
    assert result.status == "rejected"
    assert '"import os"' in result.message and "torch.nn.functional" in result.message


def test_it_rejects_oversized_source_without_a_child(pool: SandboxPool) -> None:
    result = pool.run("x = 1\n" * 5000, "solution", [()])
    assert result.status == "rejected" and "20000" in result.message


def test_it_reports_a_missing_entry_point(pool: SandboxPool) -> None:
    result = pool.run("def other():\n    return 1\n", "solution", [()])
    assert result.status == "runtime_error" and "solution" in result.message


def test_it_supports_datasets_and_data_loaders(pool: SandboxPool) -> None:
    code = (
        "import torch\nfrom torch.utils.data import Dataset, DataLoader\n\nclass Squares(Dataset):\n"
        "    def __init__(self, n):\n        self.n = n\n\n    def __len__(self):\n        return self.n\n\n"
        "    def __getitem__(self, i):\n        return torch.tensor(float(i * i))\n\n"
        "def solution(n):\n    dl = DataLoader(Squares(n), batch_size=2, num_workers=3)\n"
        "    return torch.cat([b for b in dl])\n"
    )
    result = pool.run(code, "solution", [(5,)])
    assert result.cases[0].value.tolist() == [0.0, 1.0, 4.0, 9.0, 16.0], result


def test_it_uses_a_fresh_process_for_every_submission(pool: SandboxPool) -> None:
    probe = "import numpy as np\n\ndef solution():\n    return float(np.random.rand())\n"
    first = pool.run(probe, "solution", [()]).cases[0].value
    pool.run(
        "import numpy as np\nfor i in range(100):\n    np.random.rand()\ndef solution():\n    return 0\n",
        "solution",
        [()],
    )
    assert pool.run(probe, "solution", [()]).cases[0].value == first


def test_every_call_draws_numpys_random_numbers_from_the_same_seed_as_torchs(pool: SandboxPool) -> None:
    """NumPy's global generator is seeded before every call like torch's: two cases, the repeat call and a
    re-run all draw the same numbers, so the repeat check sees no state and a re-grade no other verdict."""
    drawn = "x + float(np.random.rand()) + torch.rand(1)"
    code = f"import numpy as np\nimport torch\n\ndef solution(x):\n    return {drawn}\n"
    cases = [(torch.zeros(1),), (torch.zeros(1),)]
    first, again = pool.run(code, "solution", cases), pool.run(code, "solution", cases)
    assert first.status == "ok" and [c.ok for c in first.cases] == [True, True], first
    assert torch.equal(first.cases[0].value, first.cases[1].value)
    assert torch.equal(first.cases[0].value, again.cases[0].value)
    assert [(c.behaviour or {}).get("repeat") for c in first.cases] == ["", ""], first.cases


def test_it_seeds_pythons_random_with_the_case_seed() -> None:
    import random

    import numpy as np

    from graders.sandbox.child import CASE_SEED, seed_everything

    random.random(), np.random.rand()
    seed_everything(CASE_SEED)
    drawn = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.random(), np.random.rand()
    seed_everything(CASE_SEED)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == drawn
    assert drawn[0] == random.Random(CASE_SEED).random()


def test_it_kills_at_the_wall_limit(pool: SandboxPool) -> None:
    code = "def solution():\n    while True:\n        pass\n"
    result = pool.run(code, "solution", [()], limits=Limits(cpu_seconds=30, wall_seconds=1))
    assert result.status == "time_limit" and "wall" in result.message
    assert result.wall_ms < 3000


def test_it_reports_cpu_time_limits(pool: SandboxPool) -> None:
    code = "def solution():\n    n = 0\n    while True:\n        n += 1\n"
    result = pool.run(code, "solution", [()], limits=Limits(cpu_seconds=1, wall_seconds=10))
    assert result.status == "time_limit" and "CPU" in result.message
    assert result.cpu_ms >= 900


@pytest.mark.parametrize("seconds", [0.3, 1.0])
def test_a_cpu_limit_is_what_it_says(pool: SandboxPool, seconds: float) -> None:
    """The warden ends the job on its measured CPU: RLIMIT_CPU alone counted whole seconds from the runner's
    start, so a "2 s" limit allowed about 3 s (and 0.3 s about 1 s)."""
    code = "def solution():\n    n = 0\n    while True:\n        n += 1\n"
    result = pool.run(code, "solution", [()], limits=Limits(cpu_seconds=seconds, wall_seconds=10))
    assert result.status == "time_limit" and "CPU" in result.message, result
    # cpu_ms counts the runner's whole life: its set-up (a few ms), the job, and the warden's read interval
    assert seconds * 1000 <= result.cpu_ms < seconds * 1000 + 150, result.cpu_ms


def test_it_reports_memory_limits(pool: SandboxPool) -> None:
    result = pool.run("import torch\ndef solution():\n    return torch.ones(10 ** 9)\n", "solution", [()])
    assert result.status == "memory_limit", result


def test_a_job_gets_its_memory_on_top_of_what_torch_itself_maps() -> None:
    """``memory_mb`` is the job's: torch's own size does not eat it. Under a cap on the runner's whole
    address space (torch's CPU build maps about 640 MB, a CUDA build gigabytes) 600 MB of a 1 GiB job
    did not fit; 1.5 GB still does not."""
    code = "import torch\ndef solution(mb):\n    return float(torch.ones(mb * 2 ** 18).sum())\n"
    with SandboxPool(size=1) as own:
        fits = own.run(code, "solution", [(600,)], limits=Limits(memory_mb=1024))
        assert fits.status == "ok" and fits.cases[0].value == 600 * 2**18, fits
        over = own.run(code, "solution", [(1536,)], limits=Limits(memory_mb=1024))
        assert over.status == "memory_limit", over
    mapped = "import mmap\ndef solution(mb):\n    return len(mmap.mmap(-1, mb * 2 ** 20))\n"
    with SandboxPool(size=1, unguarded=True) as raw:  # code that owns its runner maps memory by itself
        over = raw.run(mapped, "solution", [(1536,)], limits=Limits(memory_mb=1024))
        assert over.status == "memory_limit", over  # the kernel's ENOMEM, not a runtime error


def test_it_does_not_call_the_twin_pair_once_an_example_raised(pool: SandboxPool) -> None:
    """The last ``called_once`` cases (a twin pair) are left uncalled after an example raised: two calls saved
    on an attempt whose verdict the example's error already is."""
    code = "def solution(x):\n    if x.numel() == 1:\n        raise ValueError('one')\n    return x * 2\n"
    pair = [(torch.ones(3),), (torch.zeros(3),)]
    result = pool.run(code, "solution", [(torch.ones(1),), *pair], called_once=2)
    assert result.status == "ok", result
    assert "ValueError" in str(result.cases[0].error)
    assert [case.error for case in result.cases[1:]] == [TWIN_NOT_RUN, TWIN_NOT_RUN]
    ran = pool.run(code, "solution", [(torch.ones(2),), *pair], called_once=2)
    assert ran.status == "ok" and all(case.ok for case in ran.cases), ran  # passing examples: the pair runs


def test_it_runs_once_in_a_cold_process() -> None:
    result = run_once(DOUBLE, "solution", [(torch.ones(2),)])
    assert result.status == "ok"
    assert torch.equal(result.cases[0].value, torch.full((2,), 2.0))


def test_run_once_takes_every_option_a_pool_run_takes() -> None:
    """A cold run stands in for the pool (bench/grading.py's baseline grades through it): an option added to one
    and not the other broke that bench (``called_once``), so it forwards what it does not use itself."""
    import inspect

    own = inspect.signature(run_once).parameters
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in own.values())
    pool_options = set(inspect.signature(SandboxPool.run).parameters) - {"self"}
    assert {name for name, p in own.items() if p.kind is not inspect.Parameter.VAR_KEYWORD} - {"device"} <= pool_options


def test_it_gives_the_job_its_whole_wall_time_after_a_long_wait_for_a_child() -> None:
    # On a loaded machine a job can wait seconds for a warm child; that wait must not count
    # against the time the child is given to answer (it once turned a right answer into
    # "the process died"). Here the job starts as if it had waited 30 s.
    limits = Limits(wall_seconds=2.0)
    with SandboxPool(size=1, limits=limits) as cold_pool:
        child = cold_pool._take(60)
        try:
            waited = time.monotonic() - 30
            compiled = marshal.dumps(compile_submission(DOUBLE, limits.max_source_bytes))
            job = Job(DOUBLE, compiled, "solution", [(torch.ones(2),)], limits, False, ())
            result = run_job(child, job, waited, cold_pool._packed_cases, cold_pool.device)
        finally:
            child.close()
    assert result.status == "ok", result.message
    assert torch.equal(result.cases[0].value, torch.full((2,), 2.0))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU fallback")
def test_it_falls_back_to_cpu_when_no_gpu_is_present() -> None:
    with SandboxPool(size=1, device="cuda") as gpu_pool:
        result = gpu_pool.run(DOUBLE, "solution", [(torch.ones(2),)])
    assert result.status == "ok" and result.device == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_it_runs_on_the_gpu_and_returns_cpu_tensors() -> None:
    code = "import torch\n\ndef solution(x):\n    assert x.is_cuda\n    return x @ x.T\n"
    with SandboxPool(size=1, device="cuda") as gpu_pool:
        result = gpu_pool.run(code, "solution", [(torch.ones(4, 4),)])
    assert result.status == "ok", result
    assert result.device == "cuda"
    assert result.cases[0].value.device.type == "cpu"
    assert torch.equal(result.cases[0].value, torch.full((4, 4), 4.0))


def test_it_stops_its_processes_and_removes_its_directory_on_close() -> None:
    import os

    pool = SandboxPool(size=1)
    pool.warm()
    zygote = pool.fork_server.process
    base = pool._base
    assert zygote is not None and os.path.isdir(base)
    pool.close()
    assert zygote.poll() is not None
    assert not os.path.exists(base)
    assert pool.run(DOUBLE, "solution", [(torch.ones(1),)]).status == "internal_error"


def test_it_recovers_when_the_zygote_dies() -> None:
    import signal

    with SandboxPool(size=1) as fresh:
        fresh.warm()
        assert fresh.fork_server.process is not None
        fresh.fork_server.process.send_signal(signal.SIGKILL)  # the runners die with its namespaces
        fresh.fork_server.process.wait()
        result = fresh.run(DOUBLE, "solution", [(torch.ones(1),)])
    assert result.status == "ok", result


TRAINING = """
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

class MLP(nn.Module):
    scale: float = 1.0

    def __init__(self, d: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1) * self.scale

def solution(x, y):
    model = MLP(x.shape[1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    losses = []
    for epoch in range(10):
        for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True):
            opt.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        sched.step()
        losses.append(loss.item())
    jac = torch.autograd.functional.jacobian(lambda t: t ** 2, torch.ones(3))
    return losses[-1] < losses[0], jac, {"lr": opt.param_groups[0]["lr"]}
"""


def test_it_runs_a_training_loop_with_optimizers_schedulers_and_loaders(pool: SandboxPool) -> None:
    x = torch.linspace(-1, 1, 48).reshape(16, 3)
    result = pool.run(TRAINING, "solution", [(x, x.sum(1))])
    assert result.status == "ok" and result.cases[0].ok, result
    improved, jac, state = result.cases[0].value
    assert improved is True
    assert torch.equal(jac, torch.eye(3) * 2)
    assert state == {"lr": 0.0025}


# Each expression has broken once because torch or numpy imported something lazily after the chroot.
API_SNIPPETS = {
    "interpolate": "F.interpolate(torch.rand(1,1,4,4), scale_factor=2, mode='bilinear')",
    "grid_sample": "F.grid_sample(torch.rand(1,1,4,4), torch.rand(1,2,2,2), align_corners=False)",
    "one_hot": "F.one_hot(torch.tensor([0,2]), 3)",
    "cross_entropy": "F.cross_entropy(torch.rand(2,3), torch.tensor([0,1]))",
    "ctc": "F.ctc_loss(torch.randn(5,1,4).log_softmax(2), torch.tensor([[1,2]]), torch.tensor([5]), torch.tensor([2]))",
    "lstm": "nn.LSTM(3, 4, batch_first=True)(torch.rand(2,5,3))[0]",
    "gru": "nn.GRU(3, 4)(torch.rand(5,2,3))[0]",
    "transformer": "nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)(torch.rand(2,3,8))",
    "mha": "nn.MultiheadAttention(8, 2)(torch.rand(3,1,8), torch.rand(3,1,8), torch.rand(3,1,8))[0]",
    "sdpa": "F.scaled_dot_product_attention(torch.rand(1,2,3,4), torch.rand(1,2,3,4), torch.rand(1,2,3,4))",
    "stft": "torch.stft(torch.rand(64), 16, return_complex=True).abs()",
    "unique": "torch.unique(torch.tensor([1,2,2,3]), return_counts=True)",
    "svd": "torch.linalg.svd(torch.rand(3,3))[1]",
    "eig": "torch.linalg.eig(torch.rand(3,3))[0].real",
    "lstsq": "torch.linalg.lstsq(torch.rand(4,3), torch.rand(4,2)).solution",
    "fft2": "torch.fft.fft2(torch.rand(4,4)).abs()",
    "gammaln": "torch.special.gammaln(torch.rand(3) + 1)",
    "hessian": "torch.autograd.functional.hessian(lambda t: (t ** 3).sum(), torch.rand(3))",
    "vjp": "torch.autograd.functional.vjp(lambda t: t ** 2, torch.rand(3), torch.ones(3))[1]",
    "jvp": "torch.autograd.functional.jvp(lambda t: t ** 2, torch.rand(3), torch.ones(3))[1]",
    "init": "nn.init.kaiming_uniform_(torch.empty(3, 4))",
    "pad_sequence": "nn.utils.rnn.pad_sequence([torch.ones(2), torch.ones(3)], batch_first=True)",
    "generator": "torch.rand(3, generator=torch.Generator().manual_seed(1))",
    "multinomial": "torch.multinomial(torch.tensor([0.2, 0.8]), 4, replacement=True)",
    "cdist": "torch.cdist(torch.rand(2,3), torch.rand(4,3))",
    "einsum": "torch.einsum('ij,jk->ik', torch.rand(2,3), torch.rand(3,4))",
    "conv2d": "nn.Conv2d(1, 2, 3, padding=1)(torch.rand(1,1,5,5))",
    "batchnorm": "nn.BatchNorm1d(3)(torch.rand(4,3))",
    "embedding": "nn.Embedding(5, 2)(torch.tensor([1, 4]))",
    "np_eig": "torch.from_numpy(np.linalg.eig(np.eye(2))[0])",
    "np_rng": "torch.tensor(np.random.default_rng(0).normal(size=3))",
    "np_percentile": "np.percentile(np.arange(10), 50)",
    "np_polyfit": "np.polyfit(np.arange(3), np.arange(3), 1)[0]",
    "np_interp": "np.interp(0.5, [0, 1], [0, 2])",
    "lbfgs": "lbfgs()",
    "autograd_fn": "Square.apply(torch.rand(3, requires_grad=True))",
    "bool_index": "torch.arange(5)[torch.arange(5) > 2]",
    "list_index": "torch.arange(5)[[0, 2]]",
    "tensor_print": "str(torch.rand(2, 2))",
    "repr_param": "repr(nn.Linear(1, 1))",
    "state_dict": "list(nn.Linear(1, 1).state_dict().keys())",
    "sort_topk": "torch.topk(torch.rand(5), 2).values",
    "where_nan": "torch.nan_to_num(torch.tensor([float('nan'), 1.0]))",
    "complex": "torch.view_as_real(torch.tensor([1 + 2j]))",
    "half": "torch.ones(2, dtype=torch.float16) * 2",
    "bf16": "(torch.ones(2, dtype=torch.bfloat16) * 2).float()",
    "cumsum": "torch.cumsum(torch.ones(4), 0)",
}

API_HEADER = """
import math
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

def lbfgs():
    w = torch.zeros(2, requires_grad=True)
    opt = torch.optim.LBFGS([w])
    def closure():
        opt.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    return w.detach()

"""


def test_it_supports_common_torch_and_numpy_apis(pool: SandboxPool) -> None:
    body = "".join(f"    out[{name!r}] = {expr}\n" for name, expr in API_SNIPPETS.items())
    code = API_HEADER + "def solution():\n    out = {}\n" + body + "    return len(out)\n"
    result = pool.run(code, "solution", [()], limits=Limits(cpu_seconds=10, wall_seconds=20))
    assert result.status == "ok" and result.cases[0].ok, result
    assert result.cases[0].value == len(API_SNIPPETS)


PARENT_SCRIPT = """
import sys, time
sys.path.insert(0, sys.argv[1])
from graders.sandbox import SandboxPool
pool = SandboxPool(size=2)
pool.warm()
time.sleep(0.5)
print(pool.fork_server.process.pid, pool._base, flush=True)
time.sleep(60)
"""


def test_it_leaves_no_process_behind_when_the_parent_is_killed() -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from graders.sandbox.forkserver import PROJECT_ROOT

    proc = subprocess.Popen([sys.executable, "-c", PARENT_SCRIPT, PROJECT_ROOT], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pid_text, base = proc.stdout.readline().split()
    launcher = int(pid_text)
    family = _descendants(launcher)
    assert len(family) >= 3  # zygote and two warm runners
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") for pid in (launcher, *family)):
        time.sleep(0.05)
    assert [pid for pid in (launcher, *family) if _alive(pid)] == []
    assert not os.path.exists(base)


BARE_FORK_SCRIPT = """
import os, sys, threading
sys.path.insert(0, sys.argv[1])
from graders.sandbox import zygote
ran = []
os.register_at_fork(before=lambda: ran.append("before"), after_in_child=lambda: ran.append("child"))
print(zygote._single_threaded())
r, w = os.pipe()
pid = zygote._bare_fork()
if pid == 0:
    os.write(w, (",".join(ran) or "none").encode())
    os._exit(7)
_, status = os.waitpid(pid, 0)
print(os.read(r, 100).decode(), ",".join(ran) or "none", os.waitstatus_to_exitcode(status))
threading.Thread(target=threading.Event().wait, args=(5,), daemon=True).start()
print(zygote._single_threaded())
"""


def test_runners_are_forked_without_pythons_at_fork_handlers_while_the_zygote_has_one_thread() -> None:
    """The handlers (threading, logging, random) touch hundreds of shared pages in every runner and have
    nothing to do in a single-threaded fork server; with a second thread the zygote uses os.fork."""
    import subprocess
    import sys

    from graders.sandbox.forkserver import PROJECT_ROOT

    out = subprocess.run(
        [sys.executable, "-c", BARE_FORK_SCRIPT, PROJECT_ROOT], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["True", "none", "none", "7", "False"]


def test_the_launcher_is_the_warden_and_the_zygote_only_forks_and_reaps() -> None:
    """The warden's work (directories, deadlines, reports, kills) runs in the small launcher: every page the
    zygote writes after a fork is a copy-on-write fault, its runners share them all."""
    import os

    with SandboxPool(size=2, refill=False) as p:
        _wait_for(lambda: len(p._ready) == 2)
        assert p.fork_server.process is not None
        launcher = p.fork_server.process.pid
        (zygote,) = _children(launcher)
        runners = _children(zygote)
        assert len(runners) == 2  # the zygote is their parent and reaps them
        links = [os.readlink(f"/proc/{launcher}/fd/{fd}") for fd in os.listdir(f"/proc/{launcher}/fd")]
        assert links.count("anon_inode:[pidfd]") == 3  # the zygote's and each runner's
        assert sorted(os.listdir(p._base)) == ["c1", "c2"]
        assert p.run(DOUBLE, "solution", [(torch.ones(1),)]).status == "ok"
        _wait_for(lambda: len(os.listdir(p._base)) == 1, timeout=10)  # the used runner's directory is gone
        _wait_for(lambda: len(_children(zygote)) == 1, timeout=10)


def test_a_warm_runner_holds_only_its_job_socket_the_clean_environment_and_its_seccomp_filter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read from outside, in /proc, of runners that are waiting for a job: the zygote's own fds (its link to
    the warden, its namespace fd, the other runners' pidfds) are closed, the environment their process image
    carries is exactly the clean one the fork server was started with (not the worker's, where a secret
    lives), and the seccomp program is loaded with no_new_privs."""
    import os

    from graders.sandbox import jail

    monkeypatch.setenv("QUIZSITE_CANARY_SECRET", "runner-must-not-see-this")
    with SandboxPool(size=2, refill=False) as p:
        _wait_for(lambda: len(p._ready) == 2)
        assert p.fork_server.process is not None
        (zygote,) = _children(p.fork_server.process.pid)
        runners = _children(zygote)
        assert len(runners) == 2
        for runner in runners:
            fds = sorted(int(fd) for fd in os.listdir(f"/proc/{runner}/fd"))
            assert fds[:3] == [0, 1, 2] and len(fds) == 4, fds
            assert os.readlink(f"/proc/{runner}/fd/{fds[3]}").startswith("socket:")
            with open(f"/proc/{runner}/environ", "rb") as fh:
                environ = dict(entry.split(b"=", 1) for entry in fh.read().split(b"\0") if entry)
            assert environ == {k.encode(): v.encode() for k, v in jail.process_env("cpu").items()}
            with open(f"/proc/{runner}/status") as fh:
                status = dict(line.split(":\t", 1) for line in fh.read().splitlines() if ":\t" in line)
            assert (status["Seccomp"].strip(), status["NoNewPrivs"].strip()) == ("2", "1")
        assert p.run(DOUBLE, "solution", [(torch.ones(1),)]).status == "ok"


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [int(x) for x in fh.read().split()]


def _descendants(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            children = [int(x) for x in fh.read().split()]
    except OSError:
        return []
    return [p for c in children for p in (c, *_descendants(c))]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kernel_at_least(major: int, minor: int) -> bool:
    import os
    import re

    found = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return bool(found) and (int(found[1]), int(found[2])) >= (major, minor)


def test_the_fork_server_shares_its_memory_in_huge_pages_where_the_host_allows(pool: SandboxPool) -> None:
    """One page-table entry per 2 MiB is what makes a fork cheap (see jail.share_in_huge_pages)."""
    from pathlib import Path

    modes = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not modes.exists() or "[never]" in modes.read_text() or not _kernel_at_least(6, 1):
        pytest.skip("no transparent huge pages or no MADV_COLLAPSE (Linux 6.1+) on this host")
    assert pool.fork_server.process is not None
    launcher = pool.fork_server.process.pid
    children = Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()
    zygote = int(children[0]) if children else launcher  # without a PID namespace there is no launcher
    rollup = Path(f"/proc/{zygote}/smaps_rollup").read_text()
    huge_kb = int(next(line.split()[1] for line in rollup.splitlines() if line.startswith("AnonHugePages:")))
    assert huge_kb >= 64 * 1024, rollup
    assert pool.health()["huge_pages_mb"] >= 64  # what the fork server said it got, for the worker's heartbeat


BUSY = "import torch\n\ndef solution(x):\n    for _ in range(2000):\n        x = (x @ x).tanh()\n    return x\n"  # ~1 s


def _wait_for(predicate: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("size", [1, 2])
def test_the_refill_waits_for_a_running_job_only_while_a_warm_child_is_left(size: int) -> None:
    """Forking a replacement takes CPU from the job being graded: only an empty pool refills at once."""
    import threading

    with SandboxPool(size=size) as p:
        _wait_for(lambda: len(p._ready) == size)
        requested = p._spawned
        limits = Limits(cpu_seconds=10, wall_seconds=30)
        job = threading.Thread(
            target=p.run, args=(BUSY, "solution", [(torch.eye(256) * 0.01,)]), kwargs={"limits": limits}
        )
        job.start()
        time.sleep(0.3)
        during = p._spawned - requested
        still_running = job.is_alive()
        job.join()
        _wait_for(lambda: len(p._ready) == size)
    assert still_running, "the job ended too soon to tell"
    assert during == (1 if size == 1 else 0)
    assert p._spawned - requested == 1


def test_a_cases_list_is_encoded_once_and_a_new_list_again(pool: SandboxPool) -> None:
    cases = [(torch.arange(3.0),)]
    first = pool.run(DOUBLE, "solution", cases)
    again = pool.run(DOUBLE, "solution", cases)
    other = pool.run(DOUBLE, "solution", [(torch.arange(4.0),)])
    assert torch.equal(first.cases[0].value, again.cases[0].value)
    assert torch.equal(other.cases[0].value, torch.tensor([0.0, 2.0, 4.0, 6.0]))
    assert pool._packed_cases(cases) is pool._packed_cases(cases)


def test_busy_holds_the_refill_back_until_the_caller_is_done() -> None:
    """The worker grades, stores the verdict and only then lets the pool fork a replacement."""
    with SandboxPool(size=2) as p:
        _wait_for(lambda: len(p._ready) == 2)
        requested = p._spawned
        with p.busy():
            assert p.run(DOUBLE, "solution", [(torch.ones(2),)]).status == "ok"
            time.sleep(0.3)
            held = p._spawned - requested
        _wait_for(lambda: len(p._ready) == 2)
        assert (held, p._spawned - requested) == (0, 1)


def test_a_job_whose_zygote_dies_under_it_runs_again_on_a_new_one() -> None:
    """The learner's code never got its run: an infrastructure failure, so one more on a fresh child."""
    import signal
    import threading

    with SandboxPool(size=1) as p:
        p.warm()
        assert p.fork_server.process is not None
        first = p.fork_server.process
        limits = Limits(cpu_seconds=10, wall_seconds=30)
        outcome: list = []
        job = threading.Thread(
            target=lambda: outcome.append(p.run(BUSY, "solution", [(torch.eye(256) * 0.01,)], limits=limits))
        )
        job.start()
        time.sleep(0.3)
        assert job.is_alive(), "the job ended too soon to tell"
        first.send_signal(signal.SIGKILL)
        job.join()
    assert outcome[0].status == "ok", outcome[0]
    assert p._spawned >= 2


def test_source_too_deep_to_compile_is_rejected_and_the_pool_grades_on(pool: SandboxPool) -> None:
    """Layer 1 compiles in this process, so a parser limit must be a verdict, never a crash."""
    deep = pool.run("def solution(x):\n    return x" + " + x" * 3000 + "\n", "solution", [(torch.ones(1),)])
    assert deep.status == "rejected" and "nested too deeply" in deep.message
    assert pool.run(DOUBLE, "solution", [(torch.ones(2),)]).status == "ok"


def test_it_recovers_by_itself_when_its_working_folder_is_removed_mid_load() -> None:
    """What a /tmp cleaner does: the pool's folder (and every runner's in it) goes while jobs run. Once,
    every later runner failed to start and no verdict came until the worker was stopped."""
    import shutil
    import threading

    results: list = []
    with SandboxPool(size=2) as p:
        p.warm()

        def load() -> None:
            for _ in range(30):
                results.append(p.run(DOUBLE, "solution", [(torch.ones(2),)], timeout=20))

        jobs = [threading.Thread(target=load) for _ in range(2)]
        for job in jobs:
            job.start()
        _wait_for(lambda: len(results) >= 6)
        for _ in range(20):
            try:
                shutil.rmtree(p._base)
                break
            except OSError:  # a runner's folder made while the tree went (ENOTEMPTY): a cleaner comes back
                continue
        else:
            pytest.fail("the pool's folder could not be removed in 20 tries")
        removed_at = len(results)
        for job in jobs:
            job.join()
        assert os.path.isdir(p._base)
        zygote = p.fork_server.process
        assert zygote is not None
        zygote.kill()  # and then its fork server: a new one starts in the folder made again
        zygote.wait()
        after = p.run(DOUBLE, "solution", [(torch.ones(2),)], timeout=30)
    assert removed_at < 60
    assert [r.status for r in results].count("ok") == 60, [r.message for r in results if r.status != "ok"]
    assert after.status == "ok", after


def test_a_non_contiguous_case_reaches_the_runner_non_contiguous(pool: SandboxPool) -> None:
    """A drill's transposed input stays a transposed view in the runner, visible or hidden (``x.view`` fails)."""
    code = "def solution(x):\n    return [x.is_contiguous(), list(x.stride())]\n"
    view = torch.arange(12.0).reshape(3, 4).t()
    result = pool.run(code, "solution", [(view,)], hidden=[(view,)])
    assert result.cases[0].value == [False, [1, 4]] and result.hidden[0].value == [False, [1, 4]]


def test_its_processes_say_their_role_in_ps() -> None:
    """ps, top and perf show which process is the warden, the fork server and a runner (by name)."""
    with SandboxPool(size=2, refill=False) as p:
        _wait_for(lambda: len(p._ready) == 2)
        assert p.fork_server.process is not None
        launcher = p.fork_server.process.pid
        (zygote,) = _children(launcher)
        names = [_name(pid) for pid in [launcher, zygote, *_children(zygote)]]
        assert names == ["sbx-warden", "sbx-zygote", "sbx-runner", "sbx-runner"], names


def _name(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as comm:
        return comm.read().strip()


# ------------------------------------------------------------------------------ case expressions (casemaker)


def test_a_runner_makes_every_bundled_drills_cases_bit_for_bit_as_trusted_code_would(pool: SandboxPool) -> None:
    """Case expressions run in a runner (teams author drills); the inputs are the ones they always were."""
    from graders.drills import DRILLS_DIR, generate_cases, load_drills
    from graders.drills.local import LocalRunner

    local = LocalRunner()
    for drill in load_drills(DRILLS_DIR).values():
        jailed = generate_cases(drill, 7, runner=pool, twins=True)  # twins: a [rng, g] seed pair crosses the wire
        trusted = generate_cases(drill, 7, runner=local, twins=True)
        assert [c.name for c in jailed] == [c.name for c in trusted], drill.slug
        for a, b in zip(jailed, trusted, strict=True):
            assert repr(a.args) == repr(b.args), (drill.slug, a.name)
            for x, y in zip(a.args, b.args, strict=True):
                if isinstance(x, torch.Tensor):
                    assert x.dtype == y.dtype and x.stride() == y.stride() and torch.equal(x, y), (drill.slug, a.name)


def test_a_hostile_case_expression_ends_as_a_case_error_inside_the_runner(pool: SandboxPool) -> None:
    """What an author's expression reaches is the jail's: no host file, no time past the limit."""
    specs = [
        (1, [], ["torch.from_file('/etc/hostname', size=4, dtype=torch.uint8)"], "cpu"),
        (2, [], ["torch.ones(2)"], "cpu"),
    ]
    result = pool.make_cases(specs)
    assert result.status == "ok", result.message
    assert not result.cases[0].ok and "RuntimeError" in str(result.cases[0].error)
    assert result.cases[1].ok and torch.equal(result.cases[1].value[0], torch.ones(2))
    looping = pool.make_cases([(1, [], ["sum(range(10**12))"], "cpu")], limits=Limits(cpu_seconds=0.5))
    assert looping.status == "time_limit"
