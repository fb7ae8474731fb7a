""" "Run on your own input" as a job (the worker side): the learner's code and the reference on their arguments.

A learner's "Run" stores a ``DrillRun`` row with the code and the argument expressions (checked by the web
against the case language, never evaluated there); a worker runs it here on its sandbox pool
(``graders.drills.own_input.run_on_input``) and stores both outputs and their diff on the row. Finishing it
records nothing else: no verdict, no rating, no hidden case, no seed. The lifecycle is ``jobs.lifecycle``'.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from fastpath.grading_drills import grading_drill
from graders.kinds.examples import format_value
from graders.models import DrillRun
from jobs.lifecycle import Finished, Infrastructure, register
from jobs.status import Status


class RunKind:
    name: ClassVar[str] = "drill_run"
    model: ClassVar[type[DrillRun]] = DrillRun
    related: ClassVar[tuple[str, ...]] = ("drill",)

    def queue(self, job: DrillRun) -> str:
        """The drill's grading queue: a cuda drill's run needs the GPU its reference was written for."""
        return job.drill.queue

    def load(self, pk: int) -> DrillRun:
        return DrillRun.objects.select_related("drill").get(pk=pk)

    def attach(self, job: DrillRun) -> DrillRun:
        job.drill = grading_drill(job.drill_id)
        return job

    def run(self, job: DrillRun, pool: Any, *, worker: str) -> Finished:
        """The learner's failures (their arguments, their code) are the report; the sandbox's own raise."""
        from graders.drills.own_input import RunFailure, run_on_input

        try:
            report = run_on_input(job.drill.spec, job.code, list(job.arguments), pool, format_value)
        except RunFailure as exc:
            raise Infrastructure(str(exc)) from exc
        return Finished(Status.DONE, {"result": report})

    def failed(self, message: str) -> Finished:
        return Finished(Status.INTERNAL_ERROR, {"result": {"internal_error": message[:2000]}})

    def on_finish(self, job: DrillRun, finished: Finished, now: datetime) -> None:
        """Nothing: a run is never graded and never rates the card."""
        return None


RUNS = register(RunKind())
