"""The one status vocabulary of sandbox work: jobs, sandbox runs and verdicts all speak it.

Pure (no Django, no torch): the sandbox children, the grading module, the models (their choices and
check constraints are built from the tuples below), the templates and the API all read these values.

- A **job** (a drill submission, an output card's snippet run, a drill's example outputs) is
  ``queued`` then ``running`` (``PENDING``), then final. Its final statuses depend on its kind: a
  submission ends in one of ``VERDICTS``; the other kinds end ``done``; any kind may end
  ``internal_error`` (ours, never the learner's fault).
- A **sandbox run** (``graders.sandbox.RunResult``) ends in one of ``RUN_STATUSES``.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    OK = "ok"
    DONE = "done"
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    REJECTED = "rejected"
    INTERNAL_ERROR = "internal_error"

    @property
    def label(self) -> str:
        return LABELS[self]


LABELS = {
    Status.QUEUED: "Queued",
    Status.RUNNING: "Running",
    Status.OK: "Ran",
    Status.DONE: "Done",
    Status.ACCEPTED: "Accepted",
    Status.WRONG_ANSWER: "Wrong answer",
    Status.RUNTIME_ERROR: "Runtime error",
    Status.TIME_LIMIT: "Time limit exceeded",
    Status.MEMORY_LIMIT: "Memory limit exceeded",
    Status.OUTPUT_LIMIT: "Output limit exceeded",
    Status.REJECTED: "Rejected",
    Status.INTERNAL_ERROR: "Internal error",
}

PENDING = (Status.QUEUED, Status.RUNNING)
# What the submission's own code can cause; the sandbox reports them as runs and the grader as verdicts.
LIMITS = (Status.TIME_LIMIT, Status.MEMORY_LIMIT, Status.OUTPUT_LIMIT)
RUN_STATUSES = (Status.OK, Status.REJECTED, Status.RUNTIME_ERROR, *LIMITS, Status.INTERNAL_ERROR)
VERDICTS = (
    Status.ACCEPTED,
    Status.WRONG_ANSWER,
    Status.RUNTIME_ERROR,
    *LIMITS,
    Status.REJECTED,
    Status.INTERNAL_ERROR,
)
# The final statuses of a job that is not a submission.
JOB_DONE = (Status.DONE, Status.INTERNAL_ERROR)


def choices(statuses: tuple[Status, ...]) -> list[tuple[str, str]]:
    """Django ``choices`` for a field that holds these statuses."""
    return [(status.value, status.label) for status in statuses]
