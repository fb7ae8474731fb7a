"""Expected outputs of a drill's fixed examples, for the drill page.

Why a worker computes them: the outputs are whatever the drill's reference solution returns,
and only workers import torch and run code (in the sandbox, like any submission). The web
process asks once per drill version (a ``DrillExamples`` row, unique per version, so two
page views enqueue one computation) and shows the outputs as soon as they are stored.
"""

from __future__ import annotations

import functools
import logging
from datetime import timedelta
from typing import Any, TypedDict

from celery import shared_task
from django.db import IntegrityError, transaction
from django.utils import timezone

from graders.models import Drill, DrillExamples
from graders.services import drill_spec

logger = logging.getLogger(__name__)
OUTPUT_CHARS = 800
# A request with no answer after this long lost its message (worker restart): ask again.
RESEND_AFTER = timedelta(seconds=60)


class ExampleOutput(TypedDict):
    name: str
    output: str


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


def example_outputs(drill: Drill) -> DrillExamples:
    """The row for the drill's current version, asking a worker to fill it when it is new or lost."""
    row = DrillExamples.objects.filter(drill=drill, drill_version=drill.version).first()
    if row is None:
        try:
            with transaction.atomic():
                row = DrillExamples.objects.create(drill=drill, drill_version=drill.version)
        except IntegrityError:
            return DrillExamples.objects.get(drill=drill, drill_version=drill.version)
        transaction.on_commit(functools.partial(_enqueue, row.pk, drill.queue))
    elif not row.is_ready and timezone.now() - row.requested_at > RESEND_AFTER:
        if DrillExamples.objects.filter(pk=row.pk, requested_at=row.requested_at).update(requested_at=timezone.now()):
            transaction.on_commit(functools.partial(_enqueue, row.pk, drill.queue))
    return row


def _enqueue(row_id: int, queue: str) -> None:
    compute_example_outputs.apply_async(args=[row_id], queue=queue)


def fill_example_outputs(row_id: int, runner: Any) -> bool:
    """Run the reference on the examples (seed 0: examples never depend on the seed) and store the outputs."""
    from graders.drills.schema import DrillError
    from graders.grading import ReferenceFailure, reference_outputs

    row = DrillExamples.objects.select_related("drill").filter(pk=row_id).first()
    if row is None or row.is_ready:
        return False
    drill = row.drill
    spec = drill_spec(drill.slug, drill.version, drill.definition, drill.source_path)
    fields: dict[str, Any] = {"computed_at": timezone.now()}
    try:
        cases, expected, _device = reference_outputs(spec, 0, True, runner)
    except (ReferenceFailure, DrillError) as exc:
        logger.error("example outputs of drill %s failed: %s", drill.slug, exc)
        fields["error"] = str(exc)[:2000]
    else:
        fields["outputs"] = [
            ExampleOutput(name=case.name, output=format_value(value))
            for case, value in zip(cases, expected, strict=True)
        ]
    return DrillExamples.objects.filter(pk=row_id, outputs__isnull=True, error="").update(**fields) == 1


@shared_task(name="graders.examples.compute_example_outputs", ignore_result=True, soft_time_limit=30, time_limit=40)
def compute_example_outputs(row_id: int) -> bool:
    """On a grading queue, with the worker's warm sandbox pool."""
    from graders.worker import get_pool

    return fill_example_outputs(row_id, get_pool())
