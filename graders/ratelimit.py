"""Per-learner submission rate limit, counted from the submissions table itself.

Why the database and not a cache: every web process must agree (the default cache is per
process) and the rows are written anyway, so counting a learner's recent rows is exact and
needs no extra service. Both kinds count: "Run examples" also costs a worker's time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from graders.models import Submission


@dataclass(frozen=True)
class RateLimit:
    limit: int
    window_seconds: int

    @classmethod
    def from_settings(cls) -> RateLimit:
        return cls(limit=settings.GRADER_RATE_LIMIT, window_seconds=settings.GRADER_RATE_WINDOW)


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    retry_after: int  # seconds until the oldest counted submission leaves the window (0 when allowed)

    def message(self, rule: RateLimit) -> str:
        return (
            f"Too many submissions: at most {rule.limit} every {rule.window_seconds} seconds. "
            f"Try again in {self.retry_after} s."
        )


def check_rate(user_id: int, now: datetime, rule: RateLimit | None = None) -> RateDecision:
    """Allowed while fewer than ``limit`` submissions were queued in the last ``window_seconds``."""
    rule = rule or RateLimit.from_settings()
    since = now - timedelta(seconds=rule.window_seconds)
    recent = list(
        Submission.objects.filter(user_id=user_id, queued_at__gt=since)
        .order_by("-queued_at")
        .values_list("queued_at", flat=True)[: rule.limit]
    )
    if len(recent) < rule.limit:
        return RateDecision(True, 0)
    oldest = recent[-1]
    wait = (oldest + timedelta(seconds=rule.window_seconds) - now).total_seconds()
    return RateDecision(False, max(1, int(wait) + 1))
