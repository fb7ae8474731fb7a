"""A learner's drill reviews, compiled once: the latest (every submission) and the open one of an accepted
attempt's seed (every accepted verdict).

The A/B that keeps it: docs/performance.md, "Under the ORM" (bench/prepared.py, "the latest review" and
"the open review").
"""

from __future__ import annotations

from fastpath.prepared import Prepared
from graders.models import DrillReview

LATEST: Prepared[DrillReview] = Prepared(
    lambda user_id, drill_id: DrillReview.objects.filter(user_id=user_id, drill_id=drill_id).order_by("-started_at")[:1]
)
OPEN: Prepared[DrillReview] = Prepared(
    lambda user_id, drill_id, seed: DrillReview.objects.filter(
        user_id=user_id, drill_id=drill_id, seed=seed, finished_at=None
    ).order_by("-started_at")[:1]
)
