"""The rate limit's window: when the ``limit``-th newest submission (or "Run") since a moment was queued,
read on every submit, one compiled statement per model and limit.

The A/B that keeps it: docs/performance.md, "Under the ORM" (bench/prepared.py, "rate-limit window").
"""

from __future__ import annotations

import functools
from datetime import datetime

from fastpath.prepared import Prepared
from graders.models import DrillRun, Submission


@functools.cache
def limit_th_newest(model: type[Submission | DrillRun], limit: int) -> Prepared[datetime]:
    """``.first(user_id=..., since=...)``: the ``queued_at`` of the ``limit``-th newest row after ``since``."""
    return Prepared(
        lambda user_id, since: (
            model.objects.filter(user_id=user_id, queued_at__gt=since)
            .order_by("-queued_at")
            .values_list("queued_at", flat=True)[limit - 1 : limit]
        )
    )
