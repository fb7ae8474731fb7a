"""Is a grader alive for this queue? Read from the heartbeats the workers write (``graders.worker``).

The drill and output-card pages ask while a job waits, so a learner reads "the grader is offline
(for 3 minutes)", or for a cuda drill "no GPU grader online", instead of an endless spinner; ``/healthz``
asks for every queue (one query for all of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone
from django.utils.translation import ngettext

from jobs.models import GraderHeartbeat
from jobs.routing import NO_GPU_GRADER

RECENT_ROWS = 50  # heartbeats read per question: more processes than this beat within seconds of each other


@dataclass(frozen=True)
class GraderStatus:
    queue: str
    online: int  # processes that beat within the offline window and consume the queue
    last_seen: datetime | None  # the newest heartbeat of any process that consumes it
    degraded: list[str]  # why some live process cannot grade as asked (for example no CUDA); no host names
    devices: list[str] = field(default_factory=list)  # what the live processes grade on ("cpu", "cuda")

    @property
    def offline(self) -> bool:
        return self.online == 0

    @property
    def gpu(self) -> bool:
        return self.queue == settings.GRADER_QUEUE_GPU

    @property
    def problem(self) -> str:
        """Why the queue cannot grade now, in words ("" while online)."""
        if not self.offline:
            return ""
        return NO_GPU_GRADER if self.gpu else "offline"

    def silent_for(self, now: datetime) -> str:
        """How long no grader for the queue has beaten, in words ("" when none ever did)."""
        if self.last_seen is None:
            return ""
        seconds = max(0, int((now - self.last_seen).total_seconds()))
        if seconds >= 86400:
            return ngettext("%(n)d day", "%(n)d days", seconds // 86400) % {"n": seconds // 86400}
        if seconds >= 3600:
            return ngettext("%(n)d hour", "%(n)d hours", seconds // 3600) % {"n": seconds // 3600}
        if seconds >= 60:
            return ngettext("%(n)d minute", "%(n)d minutes", seconds // 60) % {"n": seconds // 60}
        return ngettext("%(n)d second", "%(n)d seconds", seconds) % {"n": seconds}


def offline_after() -> timedelta:
    return timedelta(seconds=settings.GRADER_HEARTBEAT_SECONDS * 3)


def grader_status(queue: str, now: datetime | None = None) -> GraderStatus:
    return grader_statuses([queue], now)[queue]


def grader_statuses(queues: list[str], now: datetime | None = None) -> dict[str, GraderStatus]:
    """One query over the recent heartbeats (graderheartbeat_seen_idx); the queue filter is done here.

    A GPU process that stopped consuming the GPU queue (its runners lost CUDA) still says why under that
    queue: "offline" alone would hide the reason.
    """
    now = now or timezone.now()
    recent = list(GraderHeartbeat.objects.order_by("-seen_at")[:RECENT_ROWS])
    return {queue: _status(queue, recent, now) for queue in queues}


def _status(queue: str, recent: list[GraderHeartbeat], now: datetime) -> GraderStatus:
    rows = [row for row in recent if queue in row.queues]
    live = [row for row in rows if row.seen_at >= now - offline_after()]
    gpu_rows = [row for row in recent if row.device == "cuda"] if queue == settings.GRADER_QUEUE_GPU else []
    degraded = sorted(
        {
            str(row.health.get("error") or row.health.get("state"))[:300]
            for row in {row.pk: row for row in live + gpu_rows if row.seen_at >= now - offline_after()}.values()
            if row.health.get("state") not in (None, "ok", "starting")
        }
    )
    devices = sorted({row.device for row in live if row.device})
    return GraderStatus(queue, len(live), rows[0].seen_at if rows else None, degraded, devices)


def offline_queues(queues: list[str], now: datetime | None = None) -> set[str]:
    return {queue for queue, status in grader_statuses(queues, now).items() if status.offline}
