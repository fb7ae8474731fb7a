"""One lifecycle for all background sandbox work: claim, run, finish, requeue, and what the reaper re-sends.

Every kind of job (a drill submission, a drill's example outputs, an output card's snippet run) is a row
of a model derived from ``jobs.models.Job`` plus a ``JobKind`` that says how to run it. The database
side of a worker is here; the Celery task (``jobs.tasks.run_job``) only calls ``process``.

One delivery of a job, in ``process``:

1. **claim** ``queued -> running`` with a fresh token, in one conditional update that must change exactly
   one row; a ``running`` row whose claimant is provably dead (or whose claim is older than
   ``GRADER_STALE_AFTER``) is taken over the same way; a row claimed too often ends ``internal_error``;
2. **run** the job in this worker's sandbox pool: the kind returns the final status and fields. The
   learner's code, however broken or hostile, ends in a result here, never in an exception;
3. **finish** ``running -> final`` conditional on the token, in one transaction with the kind's
   ``on_finish`` (a drill's rating); what must happen after commit (the teams fan-out) goes on commit;
4. on an **error of ours** (an exception out of the kind's run: the pool, a reference, a bug): logged with its
   traceback under a short reference, and back to ``queued`` for a retry; a job that fails the same way twice
   (``failure_signature``), or that used up ``GRADER_MAX_ATTEMPTS`` claims, ends ``internal_error`` with a
   message that names the reference. What a learner reads never holds a traceback, and a job their input
   breaks in a way we did not foresee costs two runs, not a retry loop.
"""

from __future__ import annotations

import hashlib
import logging
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar, Protocol

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from fastpath import prepared
from jobs import notify
from jobs.models import Job
from jobs.status import PENDING, Status
from quizsite.claims import claimant_is_dead, new_claim_token, release_claim

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Finished:
    """What a kind's ``run`` returns: the final status and the fields to store with it."""

    status: Status
    fields: dict[str, Any] = field(default_factory=dict)


class Infrastructure(Exception):
    """Our failure while running a job (the pool is gone, a reference is broken): retried, never a verdict."""


class JobKind(Protocol):
    """How one kind of job runs; the lifecycle around it is the same for every kind."""

    name: ClassVar[str]
    model: ClassVar[type[Job]]
    related: ClassVar[tuple[str, ...]]  # what ``queue`` reads besides the row (select_related by the reaper)

    def queue(self, job: Job) -> str:
        """The Celery queue that runs this job."""

    def load(self, pk: int) -> Job:
        """The claimed row with everything ``run`` reads (one query)."""

    def attach(self, job: Job) -> Job:
        """What ``run`` reads besides the row, added to a row the claim returned (cached where it can)."""

    def run(self, job: Job, pool: Any, *, worker: str) -> Finished:
        """Run the job; raise ``Infrastructure`` (or any unexpected error) only for our own failures."""

    def failed(self, message: str) -> Finished:
        """The final result when the job cannot be run at all (``internal_error``)."""

    def on_finish(self, job: Job, finished: Finished, now: datetime) -> None:
        """Inside the finishing transaction, after the row is final (for example: rate the drill card)."""


_KINDS: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Make a kind runnable by name (each app registers its kinds in ``AppConfig.ready``)."""
    _KINDS[kind.name] = kind
    return kind


def kind_named(name: str) -> JobKind:
    return _KINDS[name]


def kind_of(job: Job) -> JobKind:
    return next(kind for kind in _KINDS.values() if isinstance(job, kind.model))


def kinds() -> list[JobKind]:
    return list(_KINDS.values())


_SWEEPS: dict[str, Callable[[datetime], int]] = {}


def register_sweep(name: str, sweep: Callable[[datetime], int]) -> None:
    """Background work that is given up, not sent again, once lost: ``sweep(now)`` ends every row whose worker
    is gone (the rule of ``lost``: a provably dead claimant, or a claim past its bound) and returns how many.
    An FSRS fit is one (``cards`` registers ``cards.optimising.expire_lost``): a fit that killed its worker
    (out of memory) would kill the next one too, and the learner's next fit runs on the reviews they have then.
    The reaper runs every sweep (``jobs.tasks.reap``)."""
    _SWEEPS[name] = sweep


def sweep_lost(now: datetime) -> int:
    """Run every registered sweep; one that fails is logged and leaves the others to run."""
    swept = 0
    for name, sweep in _SWEEPS.items():
        try:
            swept += sweep(now)
        except Exception:
            logger.exception("the %s sweep of lost work failed; the reaper's next run tries again", name)
    return swept


# ---------------------------------------------------------------------------------------------- claim


@dataclass(frozen=True)
class Claim:
    job: Job | None
    token: str = ""
    retry_in: float | None = None  # someone else holds a live claim: look again later
    reason: str = "claimed"


def claim(kind: JobKind, pk: int, now: datetime) -> Claim:
    """Take the row for running, or say why not (final already, raced, or held by a live worker)."""
    token = new_claim_token()
    taken = _claim(kind, pk, now, token)
    if taken.job is None:
        release_claim(token)
    return taken


def _claim(kind: JobKind, pk: int, now: datetime, token: str) -> Claim:
    taken = _take_queued(kind.model, pk, now, token)
    if taken is not None:
        return Claim(kind.attach(taken), token)
    rows = kind.model.objects.filter(pk=pk)
    current = rows.only("status", "claim_token", "claimed_at", "attempts").first()
    if current is None or current.is_final:
        return Claim(None, reason="missing" if current is None else "final")
    stale_after = timedelta(seconds=settings.GRADER_STALE_AFTER)
    if current.status == Status.RUNNING and not (
        claimant_is_dead(current.claim_token) or current.claim_is_stale(now, stale_after)
    ):
        wait = (current.claimed_at + stale_after - now).total_seconds() if current.claimed_at else 1.0
        return Claim(None, retry_in=max(wait, 0.0) + 1.0, reason="busy")
    if current.attempts >= settings.GRADER_MAX_ATTEMPTS:
        message = f"gave up after {current.attempts} attempts (the grader kept failing on this job)"
        gave_up = _finish(kind, pk, current.status, current.claim_token, kind.failed(message), now)
        return Claim(None, reason="exhausted" if gave_up else "raced")
    # A dead or stale claimant, or a queued row: take it over, conditional on what we just read.
    taken = rows.filter(status=current.status, claim_token=current.claim_token).update(
        status=Status.RUNNING, claim_token=token, claimed_at=now, attempts=F("attempts") + 1
    )
    return Claim(kind.load(pk), token) if taken == 1 else Claim(None, reason="raced")


def _take_queued(model: type[Job], pk: int, now: datetime, token: str) -> Job | None:
    """The common claim, ``queued -> running``, in one statement that also returns the row (``UPDATE ...
    RETURNING``: no second query to read what was claimed). None when the row is not a fresh queued one
    (the general path decides) or the database cannot return rows from an update."""
    values = {"status": Status.RUNNING.value, "claim_token": token, "claimed_at": now}
    below = ("attempts", settings.GRADER_MAX_ATTEMPTS)
    return prepared.update_returning(
        model, pk, values, {"status": Status.QUEUED.value}, increment="attempts", below=below
    )


# ---------------------------------------------------------------------------------------------- finish


def _finish(
    kind: JobKind, pk: int, from_status: str, token: str, finished: Finished, now: datetime, job: Job | None = None
) -> bool:
    """``from_status -> final`` for the holder of ``token``, with the kind's ``on_finish``, in one transaction."""
    with transaction.atomic():
        changed = _update_held(
            kind.model, pk, from_status, token, {"status": finished.status, "finished_at": now, **finished.fields}
        )
        if changed == 1:
            # Announced first: what on_finish sends after commit (a counterexample's job) comes after the result.
            notify.announce_on_commit(kind.name, pk)  # the submit request that waits renders it at once
            kind.on_finish(job if job is not None else kind.load(pk), finished, now)
    return changed == 1


def _update_held(model: type[Job], pk: int, status: str, token: str, values: dict[str, Any]) -> int:
    """``running -> final`` (or any move) for the holder of ``token``: the rows changed (0 or 1)."""
    return prepared.update_where(model, pk, values, {"status": status, "claim_token": token})


def finish(kind: JobKind, job: Job, token: str, finished: Finished, now: datetime | None = None) -> bool:
    """``running -> final``, only for the holder of the claim."""
    try:
        return _finish(kind, job.pk, Status.RUNNING, token, finished, now or timezone.now(), job)
    finally:
        release_claim(token)


def requeue(kind: JobKind, job: Job, token: str, failure: str = "") -> bool:
    """Hand the row back to ``queued`` after an error of ours, so a retry can claim it; ``failure`` is how it
    failed (``failure_signature``), kept so that a retry failing the same way ends the job."""
    changed = kind.model.objects.filter(pk=job.pk, status=Status.RUNNING, claim_token=token).update(
        status=Status.QUEUED, claim_token="", claimed_at=None, failure=failure
    )
    release_claim(token)
    return changed == 1


def rerun(kind: JobKind, pk: int) -> bool:
    """Back to ``queued`` with its claims counted afresh, whatever state it is in: a run asked for again by
    hand (the notes check's ``--rerun``, or a row it finds unfinished). A claim it held is released, so a
    worker still running it can no longer record a result (``finish`` is conditional on the claim); the
    kind's result fields stay until the next run overwrites them."""
    current = kind.model.objects.filter(pk=pk).only("claim_token").first()
    if current is None:
        return False
    changed = kind.model.objects.filter(pk=pk, claim_token=current.claim_token).update(
        status=Status.QUEUED, claim_token="", claimed_at=None, finished_at=None, attempts=0, failure=""
    )
    if current.claim_token:
        release_claim(current.claim_token)
    return changed == 1


def fail(kind: JobKind, pk: int, message: str) -> bool:
    """The task failed for good (time limit, retries exhausted): record ``internal_error`` once. ``message``
    goes to the log under a reference; the row says only the reference."""
    current = kind.model.objects.filter(pk=pk).only("status", "claim_token").first()
    if current is None or current.is_final:
        return False
    reference = new_reference()
    logger.error("%s %s failed for good (reference %s): %s", kind.name, pk, reference, message[-2000:])
    if current.claim_token:
        release_claim(current.claim_token)
    failed = kind.failed(failure_message(reference))
    return _finish(kind, pk, current.status, current.claim_token, failed, timezone.now())


# --------------------------------------------------------------------------------------------- process


@dataclass(frozen=True)
class Outcome:
    """What the task does next: nothing (a result is stored or someone else has it) or retry."""

    status: str
    retry_in: float | None = None


def process(kind: JobKind, pk: int, pool: Any, *, worker: str) -> Outcome:
    """Claim, run, finish (see the module docstring). A learner's broken code is a result; ours retries."""
    claimed = claim(kind, pk, timezone.now())
    if claimed.job is None:
        return Outcome(claimed.reason, claimed.retry_in)
    job, token = claimed.job, claimed.token
    try:
        try:
            finished = kind.run(job, pool, worker=worker)
        except Exception as exc:
            return _after_failure(kind, job, token, exc)
        if not finish(kind, job, token, finished):
            logger.warning("%s %s lost its claim while running; its result was dropped", kind.name, pk)
            return Outcome("raced")
        return Outcome(str(finished.status))
    finally:
        # Even when a database write failed: a retry in this process must see the claim as dead (not as
        # a live one to wait for) and take it over.
        release_claim(token)


def _after_failure(kind: JobKind, job: Job, token: str, exc: Exception) -> Outcome:
    """Log the failure with its traceback under a fresh reference; then retry with the row back in ``queued``,
    or record ``internal_error`` (naming the reference) when the last claim failed the same way or the claims
    ran out."""
    reference, signature = new_reference(), failure_signature(exc)
    logger.error(
        "%s %s failed to run (reference %s, failure %s, claim %s)",
        kind.name,
        job.pk,
        reference,
        signature,
        job.attempts,
        exc_info=exc,
    )
    if signature == job.failure or job.attempts >= settings.GRADER_MAX_ATTEMPTS:
        finish(kind, job, token, kind.failed(failure_message(reference)))
        return Outcome(Status.INTERNAL_ERROR)
    requeue(kind, job, token, signature)
    return Outcome("retry", retry_in=float(2**job.attempts))


def new_reference() -> str:
    """A short id for one failure: in the log with its traceback, and in the message the learner reads."""
    return os.urandom(4).hex()


def failure_message(reference: str) -> str:
    """What a job that failed on our side says (a verdict's message, an author's error): never a traceback."""
    return (
        f"the grader failed on this job (reference {reference}); this is our fault, not your code's, "
        "and the details are in our log under that reference"
    )


def failure_signature(exc: BaseException) -> str:
    """How a run failed, the same for the same failure in any process: the exception's type and the code
    locations it rose through (file, function, line), never its message (addresses and ids differ), but an
    ``Infrastructure`` error's message (it names the failure: the child went away, the reference failed)."""
    frames = [(f.filename.rsplit("/", 1)[-1], f.name, f.lineno) for f in traceback.extract_tb(exc.__traceback__)]
    said = str(exc) if isinstance(exc, Infrastructure) else ""
    digest = hashlib.sha256(repr((type(exc).__qualname__, frames, said)).encode("utf-8", "replace")).hexdigest()
    return f"{type(exc).__name__[:40]}:{digest[:20]}"


# ---------------------------------------------------------------------------------------------- reaper


def lost(kind: JobKind, now: datetime, queued_for: float | None = None) -> list[Job]:
    """Rows whose message may be lost, to send again (a duplicate is harmless: the claim decides).

    - ``queued`` for longer than ``queued_for`` seconds (default ``GRADER_REQUEUE_AFTER``): a publish
      that failed, or a message a dying worker had already popped (kombu counts a message as unacked
      only once the pop returns, so a worker killed in between takes it along);
    - ``running`` under a claimant that is provably dead (same host, process gone) or whose claim is
      older than ``GRADER_STALE_AFTER``.

    A worker passes ``queued_for=0`` when it starts, so what a killed worker took is graded at once.
    Served by each kind's partial pending index.
    """
    queued_for = settings.GRADER_REQUEUE_AFTER if queued_for is None else queued_for
    stale_before = now - timedelta(seconds=settings.GRADER_STALE_AFTER)
    waiting = Q(status=Status.QUEUED, queued_at__lte=now - timedelta(seconds=queued_for)) | Q(status=Status.RUNNING)
    rows = kind.model.objects.filter(waiting, status__in=PENDING).select_related(*kind.related)
    return [
        row for row in rows if row.status == Status.QUEUED or is_lost(row.claim_token, row.claimed_at, stale_before)
    ]


def is_lost(claim_token: str, claimed_at: datetime | None, stale_before: datetime) -> bool:
    """Is a running row's worker gone? Its claimant is provably dead (same host, process gone:
    ``quizsite.claims``), or it claimed the row before ``stale_before`` (past any time limit). The one
    judgment for every background row that can be lost: the job kinds' rows here, an FSRS fit
    (``cards.optimising.expire_lost``). A row that names no claimant is judged by its age alone."""
    dead = bool(claim_token) and claimant_is_dead(claim_token)
    return dead or (claimed_at is not None and claimed_at < stale_before)
