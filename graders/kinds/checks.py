""" "Check" of a course's drill draft as a job (the worker side): run it, record its report on the draft.

An editor's "Check" stores a ``DrillCheck`` row with exactly the text to check; a worker runs it here on its
sandbox pool (``graders.authoring.checking.run_check``: the reference for two seeds, the known-wrong
solutions, the alternatives) and, in the transaction that finishes the row, writes the report and the text it
ran on onto the draft, unless a later check of that draft finished first. The author's code failing in any
way is a report, never a retry: only our own failures (the pool, the database) raise. The lifecycle around it
is ``jobs.lifecycle``'.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from django.conf import settings
from django.db.models import Q

from graders.authoring.checking import failed_report, fresh_seeds, run_check
from graders.kinds.examples import format_value
from graders.models import DrillCheck, DrillDraft
from jobs.lifecycle import Finished, register
from jobs.status import Status

CHECK_PATH = "drill.toml"  # the name a check's messages give the drill file


class CheckKind:
    name: ClassVar[str] = "drill_check"
    model: ClassVar[type[DrillCheck]] = DrillCheck
    related: ClassVar[tuple[str, ...]] = ("course",)  # the reaper reads rows with it (select_related)

    def queue(self, job: DrillCheck) -> str:
        """The CPU queue, whatever the drill's device: a check judges the drill, and a CPU grader always runs."""
        return str(settings.GRADER_QUEUE_CPU)

    def load(self, pk: int) -> DrillCheck:
        return DrillCheck.objects.get(pk=pk)

    def attach(self, job: DrillCheck) -> DrillCheck:
        return job

    def run(self, job: DrillCheck, pool: Any, *, worker: str) -> Finished:
        from graders.drills.schema import DrillError, parse_drill

        try:
            spec = parse_drill(job.text, CHECK_PATH)
        except DrillError as exc:  # the web parses before it asks; a text that fails here is still the author's
            return self.done(failed_report("", "parse", str(exc)))
        budget = float(settings.COURSE_CHECK_SECONDS)
        report = run_check(spec, pool, seeds=fresh_seeds(), budget_seconds=budget, format_output=format_value)
        return self.done(report)

    def done(self, report: Any) -> Finished:
        return Finished(Status.DONE, {"report": report, "sandbox_ms": min(int(report["elapsed_ms"]), 2**31 - 1)})

    def failed(self, message: str) -> Finished:
        return Finished(Status.INTERNAL_ERROR, {"report": failed_report("", "internal", message)})

    def on_finish(self, job: DrillCheck, finished: Finished, now: datetime) -> None:
        """The draft's last check is this one, unless a later one of the same draft finished first."""
        newest = Q(last_check__isnull=True) | Q(last_check_id__lt=job.pk)
        DrillDraft.objects.filter(newest, pk=job.draft_id).update(
            checked_text=job.text, check_report=finished.fields["report"], last_check_id=job.pk
        )


CHECKS = register(CheckKind())
