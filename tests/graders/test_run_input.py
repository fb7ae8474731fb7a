""" "Run on your own input": the arguments are checked against the case language before anything is queued,
evaluated only by a runner, and the job shows both outputs with the verdicts' diff; it never grades, rates or
goes near a hidden case or seed."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from cards.models import CardState, ReviewLog
from graders.drills.local import LocalRunner
from graders.drills.own_input import RUN_SEED
from graders.kinds.runs import RUNS
from graders.models import Drill, DrillReview, DrillRun, Submission
from graders.sandbox.results import RunResult
from jobs import lifecycle as jobs
from jobs.status import Status
from tests.graders.conftest import CRASH, RIGHT, WRONG

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def post_run(client: Client, drill: Drill, arguments: str, code: str = WRONG, **headers: Any) -> Any:
    data = {"code": code, "arguments": arguments}
    return client.post(reverse("graders:run_input", args=[drill.slug]), data, **headers)


class SpyRunner(LocalRunner):
    """LocalRunner that records what it was asked to make and run."""

    def __init__(self) -> None:
        super().__init__()
        self.specs: list[Any] = []
        self.runs: list[dict[str, Any]] = []

    def make_cases(self, specs: list[tuple[Any, ...]], *, limits: object = None, background: bool = False) -> RunResult:
        self.specs.extend(specs)
        return super().make_cases(specs, limits=limits, background=background)

    def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **options: Any) -> RunResult:
        self.runs.append({"code": code, "cases": cases, **options})
        return super().run(code, entry_point, cases, **options)


def run_job(run: DrillRun, runner: LocalRunner | None = None) -> dict[str, Any]:
    assert jobs.process(RUNS, run.pk, runner or LocalRunner(), worker="test").status == Status.DONE
    run.refresh_from_db()
    assert run.status == Status.DONE and run.result is not None
    return run.result


def make_run(learner: User, drill: Drill, arguments: list[str], code: str = WRONG) -> DrillRun:
    return DrillRun.objects.create(
        user=learner, drill=drill, drill_version=drill.version, code=code, arguments=arguments
    )


# ------------------------------------------------------------------------------------------- the page


def test_it_queues_a_run_and_shows_both_outputs_with_the_diff(
    drill: Drill, client_for: Client, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = post_run(client_for, drill, "torch.tensor([1.0, 5.0])", **HTMX)
    assert response.status_code == 200 and len(callbacks) == 1
    run = DrillRun.objects.get()
    assert (run.arguments, run.code, run.status) == (["torch.tensor([1.0, 5.0])"], WRONG, Status.QUEUED)
    assert 'hx-get="' + reverse("graders:run_status", args=[run.uuid]) in response.content.decode()
    run_job(run)
    page = client_for.get(reverse("graders:run_status", args=[run.uuid])).content.decode()
    assert "tensor([3., 7.])" in page and "tensor([2., 6.])" in page  # theirs, the reference's
    assert "data-run-differs" in page and "data-mismatch" in page and "hx-get" not in page
    assert client_for.get(reverse("graders:run", args=[run.uuid])).status_code == 200


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ("torch.tensor([1.0,", "are not valid Python arguments"),
        ("torch.__class__", "uses the private attribute '__class__'"),
        ("open('/etc/passwd')", "uses the unknown name 'open'"),
        ("x=torch.ones(2)", "must be positional"),
        ("(lambda: 1)()", "no lambda"),
    ],
)
def test_it_refuses_arguments_outside_the_case_language_and_queues_nothing(
    drill: Drill, client_for: Client, django_capture_on_commit_callbacks: Any, arguments: str, said: str
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        htmx = post_run(client_for, drill, arguments, **HTMX)
        plain = post_run(client_for, drill, arguments)
    assert escape(said) in htmx.content.decode() and "data-refused" in htmx.content.decode()
    assert plain.status_code == 400
    assert escape(said) in plain.content.decode() and "data-arguments-errors" in plain.content.decode()
    assert callbacks == [] and not DrillRun.objects.exists()


def test_it_has_its_own_rate_limit_apart_from_submissions(
    drill: Drill, learner: User, client_for: Client, settings: Any
) -> None:
    settings.GRADER_RUN_RATE_LIMIT, settings.GRADER_RATE_LIMIT = 2, 1
    client_for.post(reverse("graders:submit", args=[drill.slug]), {"code": RIGHT, "kind": "submit"})
    assert [post_run(client_for, drill, "torch.ones(2)", **HTMX).status_code for _ in range(2)] == [200, 200]
    refused = post_run(client_for, drill, "torch.ones(2)", **HTMX)
    assert "Too many runs: at most 2 every 60 seconds" in refused.content.decode()
    plain = post_run(client_for, drill, "torch.ones(2)")
    assert plain.status_code == 429 and int(plain["Retry-After"]) >= 1
    assert DrillRun.objects.count() == 2 and Submission.objects.count() == 1


def test_the_drill_page_offers_run_beside_submit(drill: Drill, client_for: Client) -> None:
    page = client_for.get(reverse("graders:drill", args=[drill.slug])).content.decode()
    assert f'hx-post="{reverse("graders:run_input", args=[drill.slug])}"' in page and 'name="arguments"' in page


def test_another_learners_run_is_a_404(drill: Drill, learner: User, client_for: Client) -> None:
    theirs = make_run(User.objects.create_user("other"), drill, ["torch.ones(2)"])
    assert client_for.get(reverse("graders:run_status", args=[theirs.uuid])).status_code == 404
    assert client_for.get(reverse("graders:run", args=[theirs.uuid])).status_code == 404


# ---------------------------------------------------------------------------------------------- the job


def test_it_reports_both_outputs_and_the_verdicts_diff(drill: Drill, learner: User) -> None:
    report = run_job(make_run(learner, drill, ["torch.tensor([1.0, 5.0])"]))
    assert report["expected"] == "tensor([2., 6.])\n# shape (2,), float32"
    assert report["actual"] == "tensor([3., 7.])\n# shape (2,), float32"
    assert (report["status"], report["same"], report["input_error"]) == ("ok", False, "")
    mismatch = report["mismatch"]
    assert (mismatch["kind"], mismatch["index"], mismatch["expected"], mismatch["actual"]) == ("value", [0], 2.0, 3.0)
    right = run_job(make_run(learner, drill, ["torch.zeros(2, 3)"], code=RIGHT))
    assert (right["same"], right["actual"] == right["expected"], "mismatch" in right) == (True, True, False)


def test_it_shows_the_learners_error_when_their_code_raises(drill: Drill, learner: User) -> None:
    report = run_job(make_run(learner, drill, ["torch.ones(2)"], code=CRASH))
    assert (report["status"], report["actual"], report["same"]) == ("runtime_error", None, None)
    assert "NameError" in report["error"] and "undefined_name" in report["error"]
    assert report["expected"] == "tensor([2., 2.])\n# shape (2,), float32"


def test_an_argument_that_raises_is_the_reports_content_and_nothing_runs(drill: Drill, learner: User) -> None:
    runner = SpyRunner()
    report = run_job(make_run(learner, drill, ["torch.ones(2, -5)"]), runner)
    assert "RuntimeError" in report["input_error"] and report["expected"] is None and runner.runs == []


def test_a_reference_that_refuses_the_input_says_why_without_its_code(make_drill: Any, learner: User) -> None:
    from tests.graders.conftest import drill_text

    strict = make_drill(drill_text().replace("return x + 1", "assert x.dim() == 1, 'one dimension'\\n    return x + 1"))
    report = run_job(make_run(learner, strict, ["torch.ones(2, 2)"]))
    assert report["reference_error"] == "AssertionError: one dimension"
    assert report["actual"] is not None and report["same"] is None


def test_it_never_touches_hidden_cases_seeds_verdicts_or_the_card(drill: Drill, learner: User) -> None:
    runner = SpyRunner()
    run = make_run(learner, drill, ["torch.randn(2, generator=g)", "3"])
    report = run_job(run, runner)
    # One spec, the learner's own expressions, seeded with RUN_SEED: no drill case, no hidden generator, no seed.
    assert runner.specs == [(RUN_SEED, [], ["torch.randn(2, generator=g)", "3"], "cpu")]
    assert [r.get("reference", False) for r in runner.runs] == [True, False]
    assert all(r.get("hidden") is None and len(r["cases"]) == 1 for r in runner.runs)
    assert report["input_error"] == "" and report["status"] == "runtime_error"  # solution(x) got two arguments
    assert not Submission.objects.exists() and not DrillReview.objects.exists()
    assert not CardState.objects.exists() and not ReviewLog.objects.exists()


def test_it_reads_the_arguments_as_a_call_does() -> None:
    from graders.drills.schema import call_arguments

    assert call_arguments("torch.tensor([1.0, 2.0]), 3") == ("torch.tensor([1.0, 2.0])", "3")
    assert call_arguments("") == ()
    assert call_arguments("[i * 2 for i in range(3)], torch.randn(2,\n 3, generator=g)") == (
        "[i * 2 for i in range(3)]",
        "(torch.randn(2,\n 3, generator=g))",  # a line break is valid in a call, and in parentheses alone
    )
