"""Expected outputs of a drill's fixed examples, for the drill page: asked for by the web, run as a job.

Why a worker computes them: the outputs are whatever the drill's reference solution returns, and only
workers import torch and run code (in the sandbox, like any submission). They are asked for once per
drill version (a ``DrillExamples`` row, unique per version, so two requests enqueue one computation):
by ``import_drills`` for every drill it imports, or by the drill page's POST when a drill has none yet.
A GET only reads the row (``stored_outputs``); the job lifecycle is ``jobs.lifecycle``'.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, TypedDict

from fastpath.grading_drills import grading_drill
from graders.models import Drill, DrillExamples
from jobs import tasks
from jobs.lifecycle import Finished, Infrastructure, register
from jobs.status import Status

OUTPUT_CHARS = 800


class ExampleOutput(TypedDict):
    name: str
    output: str


def example_outputs(drill: Drill) -> DrillExamples:
    """The row for the drill's current version; a new one is queued for a worker after commit. Writes:
    only the import and POSTs call it."""
    return tasks.request(DrillExamples, drill=drill, drill_version=drill.version)


def stored_outputs(drill: Drill) -> DrillExamples | None:
    """The row for the drill's current version, if one was asked for: what a page (a GET) reads."""
    return DrillExamples.objects.filter(drill=drill, drill_version=drill.version).first()


def format_value(value: Any) -> str:
    """The reference's output as the learner would print it, with a tensor's shape and dtype.

    The values come from the drill's trusted reference (through the sandbox), so ``repr`` is safe;
    torch's repr already summarises large tensors, and the text is cut at ``OUTPUT_CHARS``.
    """
    import torch

    text = repr(value)
    if isinstance(value, torch.Tensor):
        text += f"\n# shape {tuple(value.shape)}, {str(value.dtype).removeprefix('torch.')}"
    return text if len(text) <= OUTPUT_CHARS else text[: OUTPUT_CHARS - 1] + "…"


class ExamplesKind:
    name: ClassVar[str] = "examples"
    model: ClassVar[type[DrillExamples]] = DrillExamples
    related: ClassVar[tuple[str, ...]] = ("drill",)

    def queue(self, job: DrillExamples) -> str:
        return job.drill.queue

    def load(self, pk: int) -> DrillExamples:
        return DrillExamples.objects.select_related("drill").get(pk=pk)

    def attach(self, job: DrillExamples) -> DrillExamples:
        job.drill = grading_drill(job.drill_id)
        return job

    def run(self, job: DrillExamples, pool: Any, *, worker: str) -> Finished:
        """The reference on the examples (seed 0: examples never depend on the seed)."""
        from graders.drills.grading import ReferenceFailure, reference_outputs
        from graders.drills.schema import DrillError

        drill = job.drill
        if drill.version != job.drill_version:
            return self.failed("the drill changed since these examples were requested")
        try:
            cases, expected, _device = reference_outputs(drill.spec, 0, True, pool)
        except DrillError as exc:
            return self.failed(str(exc))
        except ReferenceFailure as exc:
            raise Infrastructure(str(exc)) from exc
        outputs = [ExampleOutput(name=c.name, output=format_value(v)) for c, v in zip(cases, expected, strict=True)]
        return Finished(Status.DONE, {"outputs": outputs})

    def failed(self, message: str) -> Finished:
        return Finished(Status.INTERNAL_ERROR, {"error": message[:2000]})

    def on_finish(self, job: DrillExamples, finished: Finished, now: datetime) -> None:
        return None


EXAMPLES = register(ExamplesKind())
