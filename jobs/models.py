"""The job system's tables: the abstract ``Job`` every kind's table derives from, and the grading processes'
heartbeats.

They live with the lifecycle that drives them (``jobs.lifecycle``), in the app at the base, so that every app
with a job kind of its own (``graders``, ``outputs``) builds on this app alone. The heartbeats' table keeps
the name it had in ``graders`` (``graders_graderheartbeat``): moving the model moved no data.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import ClassVar

from django.db import models
from django.utils import timezone

from jobs.status import JOB_DONE, PENDING, Status


class Job(models.Model):
    """Background sandbox work with one lifecycle: ``queued -> running -> final`` (``jobs.lifecycle``).

    Every move is a conditional ``update()`` that must change exactly one row: a worker claims a
    queued row with a fresh ``claim_token`` (or takes over a running one whose claimant died) and
    only the holder of the claim may record the final status. Each kind lists its final statuses in
    ``FINAL``; the check constraints below hold for every kind.
    """

    FINAL: ClassVar[tuple[Status, ...]] = JOB_DONE

    status = models.CharField(max_length=16, default=Status.QUEUED.value)
    queued_at = models.DateTimeField(default=timezone.now)
    claim_token = models.CharField(max_length=200, blank=True, help_text="host:pid:start:nonce of the claimant.")
    claimed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="How many times a worker claimed the row.")
    failure = models.CharField(
        max_length=64,
        blank=True,
        help_text="How the last claim failed on our side (lifecycle.failure_signature): the same again ends the job.",
    )

    class Meta:
        abstract = True
        constraints = [
            # A running row always names its claimant, so a dead claim can be detected.
            models.CheckConstraint(
                condition=~models.Q(status=Status.RUNNING)
                | (models.Q(claimed_at__isnull=False) & ~models.Q(claim_token="")),
                name="%(app_label)s_%(class)s_running_is_claimed",
            ),
            # A final row always has its finish time; a pending row has none.
            models.CheckConstraint(
                condition=models.Q(status__in=PENDING, finished_at__isnull=True)
                | (~models.Q(status__in=PENDING) & models.Q(finished_at__isnull=False)),
                name="%(app_label)s_%(class)s_final_is_finished",
            ),
        ]

    @property
    def is_final(self) -> bool:
        return self.status not in PENDING

    def claim_is_stale(self, now: datetime, stale_after: timedelta) -> bool:
        return self.status == Status.RUNNING and self.claimed_at is not None and self.claimed_at < now - stale_after


def job_constraints(model: str, finals: tuple[Status, ...]) -> list[models.BaseConstraint]:
    """The shared job constraints plus the status check for one kind's final statuses."""
    valid = models.CheckConstraint(condition=models.Q(status__in=[*PENDING, *finals]), name=f"{model}_status_valid")
    return [*Job.Meta.constraints, valid]


class GraderHeartbeat(models.Model):
    """One live grading process: written at start and every few seconds (``graders.worker``).

    The pages and ``/healthz`` read it to tell "waiting for a grader" from "the grader is offline".
    """

    name = models.CharField(max_length=200, unique=True, help_text="host:pid of the grading process.")
    queues = models.JSONField(default=list, help_text="The Celery queues it consumes.")
    device = models.CharField(max_length=16, help_text="The device its sandbox pool was asked for.")
    health = models.JSONField(default=dict, help_text="Its sandbox pool's own report (state, device, error).")
    started_at = models.DateTimeField(default=timezone.now)
    seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "graders_graderheartbeat"  # its name from before the move (jobs/migrations/0001_initial.py)
        indexes = [
            # Is any grader alive? WHERE seen_at > now - OFFLINE_AFTER ORDER BY seen_at DESC.
            models.Index(fields=["-seen_at"], name="graderheartbeat_seen_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} seen {self.seen_at:%H:%M:%S}"
