"""Is a grader alive for this queue? Read from the heartbeats the workers write (``graders.worker``).

The drill and output-card pages ask while a job waits, so a learner reads "the grader is offline
(for 3 minutes)" instead of an endless spinner; ``/healthz`` asks for every queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from graders.models import GraderHeartbeat


@dataclass(frozen=True)
class GraderStatus:
    queue: str
    online: int  # processes that beat within the offline window and consume the queue
    last_seen: datetime | None  # the newest heartbeat of any process that consumes it
    degraded: list[str]  # why some live process cannot grade as asked (for example no CUDA); no host names

    @property
    def offline(self) -> bool:
        return self.online == 0

    def silent_for(self, now: datetime) -> str:
        """How long no grader for the queue has beaten, in words ("" when none ever did)."""
        if self.last_seen is None:
            return ""
        seconds = max(0, int((now - self.last_seen).total_seconds()))
        for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
            if seconds >= size:
                count = seconds // size
                return f"{count} {unit}{'s' if count != 1 else ''}"
        return f"{seconds} second{'s' if seconds != 1 else ''}"


def offline_after() -> timedelta:
    return timedelta(seconds=settings.GRADER_HEARTBEAT_SECONDS * 3)


def grader_status(queue: str, now: datetime | None = None) -> GraderStatus:
    """One query over the recent heartbeats (graderheartbeat_seen_idx); the queue filter is done here."""
    now = now or timezone.now()
    rows = [row for row in GraderHeartbeat.objects.order_by("-seen_at")[:50] if queue in row.queues]
    live = [row for row in rows if row.seen_at >= now - offline_after()]
    degraded = sorted(
        {
            str(row.health.get("error") or row.health.get("state"))[:300]
            for row in live
            if row.health.get("state") not in (None, "ok", "starting")
        }
    )
    return GraderStatus(queue, len(live), rows[0].seen_at if rows else None, degraded)
