""" "Run on your own input": the learner's code and the reference on arguments the learner typed, side by side.

Pure Python (torch, no Django): the ``drill_run`` job kind (``graders.kinds.runs``) calls ``run_on_input`` on a
worker's sandbox pool. Steps: 1. the argument expressions evaluated in a runner (``Runner.make_cases``, the
casemaker every drill case goes through), never in this process; 2. the reference on them (``reference=True``);
3. the learner's code on them; 4. the two outputs judged as a visible case is (the contract, then ``compare``),
so the diff is the one a verdict shows.

Nothing here grades: no hidden case, no seed of the drill's (the expressions' ``g`` and ``rng`` are seeded with
``RUN_SEED``, the same for every run, so a run is repeatable), no verdict. The learner's input failing (an
expression that raises, a shape the reference refuses) is the report's content, never an error of ours.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

from graders.drills.cases import Case
from graders.drills.compare import Mismatch
from graders.drills.grading import Runner, _checks, _judge_case, runner_device, sandbox_limits
from graders.drills.schema import Drill

RUN_SEED = 0  # what the arguments' g and rng are seeded with: never a seed of the drill's cases
ERROR_CHARS = 2000


class RunReport(TypedDict):
    """What a run shows: the reference's output and the learner's, and whether (and where) they differ."""

    arguments: list[str]
    input_error: str  # the arguments could not be made (then nothing ran)
    expected: str | None  # the reference's output, formatted; None when it did not return
    reference_error: str  # why the reference did not return (its exception line only: its code stays hidden)
    status: str  # the learner's run: "ok", "runtime_error", a limit, "rejected"...
    actual: str | None
    error: str  # the learner's error (their own traceback) when it did not return
    same: bool | None  # the learner's output passes the drill's comparison; None when there is nothing to compare
    message: str  # what the comparison (or the contract) says
    stdout: str
    wall_ms: float
    device: str
    mismatch: NotRequired[Mismatch]


def _report(arguments: list[str], device: str, **fields: Any) -> RunReport:
    report: RunReport = {
        "arguments": arguments,
        "input_error": "",
        "expected": None,
        "reference_error": "",
        "status": "",
        "actual": None,
        "error": "",
        "same": None,
        "message": "",
        "stdout": "",
        "wall_ms": 0.0,
        "device": device,
    }
    report.update(fields)  # type: ignore[typeddict-item]  # the callers pass RunReport keys by name
    return report


class RunFailure(RuntimeError):
    """The sandbox failed on our side (an internal error of a runner): retried by the job, never shown."""


def run_on_input(
    drill: Drill, code: str, arguments: list[str], runner: Runner, format_output: Callable[[Any], str]
) -> RunReport:
    """Steps 1-4 above; ``arguments`` were checked against the case language before the job was queued."""
    device = runner_device(drill, runner)
    limits = sandbox_limits(drill.limits)
    made = runner.make_cases([(RUN_SEED, [], list(arguments), device)], limits=limits)
    if made.status == "internal_error":
        raise RunFailure(f"making the arguments: {made.message}")
    args = made.cases[0].value if made.status == "ok" and len(made.cases) == 1 else None
    if not isinstance(args, tuple):
        why = made.cases[0].error if made.status == "ok" and made.cases else f"{made.status}: {made.message}"
        return _report(arguments, device, input_error=str(why or "not a tuple of arguments")[:ERROR_CHARS])
    case = Case("yours", args, hidden=False)
    options = {"limits": limits, "grad": drill.grad, **_checks(drill)}
    reference = runner.run(drill.reference, drill.entry_point, [case.args], reference=True, **options)
    mine = runner.run(code, drill.entry_point, [case.args], **options)
    for result in (reference, mine):
        if result.status == "internal_error":
            raise RunFailure(result.message)
    ran = reference.status == "ok" and len(reference.cases) == 1 and reference.cases[0].ok
    fields: dict[str, Any] = {"stdout": mine.stdout or "", "wall_ms": float(mine.wall_ms or 0)}
    if ran:
        fields["expected"] = format_output(reference.cases[0].value)
    else:
        fields["reference_error"] = _last_line(reference.cases[0].error if reference.cases else reference.message)
    returned = mine.status == "ok" and len(mine.cases) == 1 and mine.cases[0].ok
    fields["status"] = mine.status if mine.status != "ok" or returned else "runtime_error"
    if not returned:
        fields["error"] = str((mine.cases[0].error if mine.cases else "") or mine.message)[:ERROR_CHARS]
        return _report(arguments, str(mine.device or device), **fields)
    fields["actual"] = format_output(mine.cases[0].value)
    if ran:
        record = reference.cases[0].behaviour
        test, _status, mismatch = _judge_case(case, mine.cases[0], reference.cases[0].value, record, drill)
        fields.update(same=test["passed"], message="" if test["passed"] else test["message"])
        if mismatch is not None:
            fields["mismatch"] = mismatch
    return _report(arguments, str(mine.device or device), **fields)


def _last_line(error: str | None) -> str:
    """The exception line of the reference's error: its frames would show the reference's code."""
    lines = [line for line in str(error or "").strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "the reference did not return")[:ERROR_CHARS]
