"""The status vocabulary's labels in the learner's language (docs/i18n.md).

``jobs.status`` stays pure (the sandbox and the grading core read it), so its ``LABELS`` are the
English source; pages, model choices and the hub read these lazy translations instead, and makemessages
finds each label here.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _

from jobs.status import Status

STATUS_LABELS: dict[Status, Any] = {
    Status.QUEUED: _("Queued"),
    Status.RUNNING: _("Running"),
    Status.OK: _("Ran"),
    Status.DONE: _("Done"),
    Status.ACCEPTED: _("Accepted"),
    Status.WRONG_ANSWER: _("Wrong answer"),
    Status.RUNTIME_ERROR: _("Runtime error"),
    Status.TIME_LIMIT: _("Time limit exceeded"),
    Status.MEMORY_LIMIT: _("Memory limit exceeded"),
    Status.OUTPUT_LIMIT: _("Output limit exceeded"),
    Status.REJECTED: _("Rejected"),
    Status.INTERNAL_ERROR: _("Internal error"),
}


def translated_choices(statuses: tuple[Status, ...]) -> list[tuple[str, Any]]:
    """Django ``choices`` for a field that holds these statuses, labelled in the learner's language."""
    return [(status.value, STATUS_LABELS[status]) for status in statuses]
