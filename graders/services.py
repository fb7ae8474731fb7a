"""Submission lifecycle: create, claim, grade, finish, reap.

Plain functions the Celery task (and tests) call. Every state change is a conditional
``update()`` that must change exactly one row, so the database, not the broker, decides
who grades a submission and that it gets exactly one final verdict:

- ``queued -> running``: only from QUEUED, or from RUNNING whose claimant is provably dead
  (same host, process gone) or whose claim is older than ``GRADER_STALE_AFTER`` (longer
  than the task's hard time limit, so no live grader can still hold it).
- ``running -> final``: only by the claim token that holds the row.

Nothing here imports torch: the web process calls ``create_submission``; grading imports
``graders.grading`` lazily.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import socket
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.dispatch import Signal
from django.utils import timezone

from graders.models import FINAL_STATUSES, Drill, Status, Submission

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from graders.drills.schema import Drill as DrillSpec

logger = logging.getLogger(__name__)


# Sent once per submission, after its final verdict is committed (transitions use update(), which
# sends no post_save). Arguments: submission_id, user_id, drill_id, kind, status. Receivers'
# errors are logged and never undo or fail the verdict.
verdict_recorded = Signal()


class Runner(Protocol):
    """What ``graders.grading.grade`` needs: the sandbox pool (or anything shaped like it)."""

    def run(self, code: str, entry_point: str, cases: Any, *, limits: Any = None, grad: bool = False) -> Any: ...


# ---------------------------------------------------------------------------------- create


def submission_seed(drill: Drill, day: date) -> int:
    """Hidden cases change every day per drill but stay fixed within the day.

    A learner cannot overfit yesterday's hidden inputs, while every submission of the
    day shares one (version, seed) pair, so the worker computes reference outputs once.
    """
    digest = hashlib.sha256(f"{drill.version}/{day.isoformat()}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


# A blip in the broker is retried at once; a longer outage is left to the reaper.
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}


def enqueue(submission_id: int, queue: str) -> None:
    """Send a committed submission to its queue; a broker failure is logged, never raised.

    Runs in the submit request's on-commit callback: the row is already stored as QUEUED, and
    ``reap_submissions`` re-sends rows left queued, so an unreachable broker must not turn the
    learner's submit into a server error.
    """
    from graders.tasks import grade_submission

    try:
        grade_submission.apply_async(args=[submission_id], queue=queue, retry=True, retry_policy=PUBLISH_RETRY)
    except Exception:
        logger.exception("could not queue submission %s on %s; the reaper will send it again", submission_id, queue)


def create_submission(
    user: AbstractBaseUser,
    drill: Drill,
    code: str,
    kind: str = Submission.Kind.SUBMIT,
    *,
    seed: int | None = None,
    now: datetime | None = None,
) -> Submission:
    """Store a QUEUED submission and send it to its device's queue once the row is committed."""
    now = now or timezone.now()
    if seed is None:
        seed = submission_seed(drill, timezone.localdate(now))
    submission = Submission.objects.create(
        user=user, drill=drill, code=code, kind=kind, seed=seed, drill_version=drill.version, queued_at=now
    )
    transaction.on_commit(functools.partial(enqueue, submission.pk, drill.queue))
    return submission


# ----------------------------------------------------------------------------------- claims

_active_tokens: set[str] = set()
_active_lock = threading.Lock()


@functools.cache
def _process_identity(pid: int) -> str:
    """host:pid:start-time; the start time tells a reused pid from the process that claimed."""
    return f"{socket.gethostname()}:{pid}:{_start_time(pid) or 0}"


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat, or None when the process is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def new_claim_token() -> str:
    return f"{_process_identity(os.getpid())}:{os.urandom(4).hex()}"


def claimant_is_dead(token: str) -> bool:
    """True only when we can prove it: the claimant ran on this host and is gone.

    On another host we cannot tell, and the stale-claim rule decides instead.
    """
    try:
        host, pid_text, start, _nonce = token.rsplit(":", 3)
        pid = int(pid_text)
    except ValueError:
        return True
    if host != socket.gethostname():
        return False
    if pid == os.getpid():
        with _active_lock:
            return token not in _active_tokens
    if not Path("/proc").is_dir():
        return False
    return _start_time(pid) != start


@dataclass(frozen=True)
class Claim:
    submission: Submission | None
    token: str = ""
    retry_in: float | None = None  # someone else holds a live claim: look again later
    reason: str = "claimed"


def claim_submission(submission_id: int, *, now: datetime | None = None) -> Claim:
    """Take the row for grading, or say why not (final already, raced, or held by a live grader)."""
    now = now or timezone.now()
    token = new_claim_token()
    fast = _claim_queued(submission_id, token, now)
    if fast is not None:
        return fast
    stale_after = timedelta(seconds=settings.GRADER_STALE_AFTER)
    sub = Submission.objects.select_related("drill").filter(pk=submission_id).first()
    if sub is None:
        return Claim(None, reason="missing")
    if sub.is_final:
        return Claim(None, reason="final")
    if sub.status == Status.RUNNING and not (claimant_is_dead(sub.claim_token) or sub.claim_is_stale(now, stale_after)):
        wait = (sub.claimed_at + stale_after - now).total_seconds() if sub.claimed_at else 1.0
        return Claim(None, retry_in=max(wait, 0.0) + 1.0, reason="busy")
    if sub.attempts >= settings.GRADER_MAX_ATTEMPTS:
        message = f"gave up after {sub.attempts} attempts (the grader kept failing on this submission)"
        verdict = internal_error_verdict(message)
        changed = _transition(sub, sub.status, sub.claim_token, status=Status.INTERNAL_ERROR, verdict=verdict, now=now)
        if changed:
            _announce(sub, Status.INTERNAL_ERROR)
        return Claim(None, reason="exhausted" if changed else "raced")
    with _active_lock:
        _active_tokens.add(token)
    changed = Submission.objects.filter(pk=sub.pk, status=sub.status, claim_token=sub.claim_token).update(
        status=Status.RUNNING, claim_token=token, claimed_at=now, started_at=now, attempts=F("attempts") + 1
    )
    if changed != 1:
        release_claim(token)
        return Claim(None, reason="raced")
    sub.status, sub.claim_token, sub.claimed_at, sub.started_at = Status.RUNNING, token, now, now
    sub.attempts += 1
    return Claim(sub, token=token)


_CLAIM_QUEUED_SQL = (
    "UPDATE {table} SET status = %s, claim_token = %s, claimed_at = %s, started_at = %s, attempts = attempts + 1"
    " WHERE id = %s AND status = %s AND attempts < %s RETURNING user_id, drill_id, code, kind, seed, attempts,"
    " (SELECT version FROM {drills} WHERE {drills}.id = drill_id)"
)
_drills: dict[int, Drill] = {}


def _claim_queued(submission_id: int, token: str, now: datetime) -> Claim | None:
    """The common case, QUEUED -> RUNNING, in one statement that also returns what grading needs.

    The same guard as the general path (status and attempts in the WHERE clause), without its
    SELECT; the ORM has no UPDATE ... RETURNING, and building two ORM queries cost more than
    the database work itself (1 ms against 0.1 ms here). The drill's current version comes back in
    the same statement, so a cached drill row is reused without a query. None: not claimable this way.
    """
    if connection.vendor not in ("sqlite", "postgresql"):
        return None
    stamp = connection.ops.adapt_datetimefield_value(now)
    quote = connection.ops.quote_name
    sql = _CLAIM_QUEUED_SQL.format(table=quote(Submission._meta.db_table), drills=quote(Drill._meta.db_table))
    params = [
        Status.RUNNING.value,
        token,
        stamp,
        stamp,
        submission_id,
        Status.QUEUED.value,
        settings.GRADER_MAX_ATTEMPTS,
    ]
    with _active_lock:
        _active_tokens.add(token)  # before the row names it: a live claim must never look dead
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        release_claim(token)
        return None
    user_id, drill_id, code, kind, seed, attempts, drill_version = rows[0]
    sub = Submission(
        pk=submission_id, user_id=user_id, drill_id=drill_id, code=code, kind=kind, seed=seed, attempts=attempts
    )
    sub.status, sub.claim_token, sub.claimed_at, sub.started_at = Status.RUNNING, token, now, now
    sub.drill = current_drill(drill_id, drill_version)
    return Claim(sub, token=token)


def current_drill(drill_id: int, version: str) -> Drill:
    """The drill row, reused across tasks while its version is unchanged (the claim returns it)."""
    cached = _drills.get(drill_id)
    if cached is None or cached.version != version:
        cached = _drills[drill_id] = Drill.objects.get(pk=drill_id)
    return cached


def release_claim(token: str) -> None:
    """Forget a claim this process held (the row is final or handed back)."""
    with _active_lock:
        _active_tokens.discard(token)


def requeue_claim(submission_id: int, token: str) -> bool:
    """Hand the row back to QUEUED after an infrastructure error, so a retry can claim it."""
    changed = Submission.objects.filter(pk=submission_id, status=Status.RUNNING, claim_token=token).update(
        status=Status.QUEUED, claim_token="", claimed_at=None
    )
    release_claim(token)
    return changed == 1


def _transition(
    sub: Submission, from_status: str, token: str, *, status: str, verdict: dict[str, Any], now: datetime
) -> bool:
    changed = Submission.objects.filter(pk=sub.pk, status=from_status, claim_token=token).update(
        status=status, verdict=verdict, finished_at=now
    )
    return changed == 1


def internal_error_verdict(message: str) -> dict[str, Any]:
    return {"status": Status.INTERNAL_ERROR.value, "message": message, "tests": [], "passed": 0, "total": 0}


# ---------------------------------------------------------------------------------- grading


@functools.lru_cache(maxsize=256)
def drill_spec(slug: str, version: str, definition: str, source_path: str) -> DrillSpec:
    """Parse a drill's stored definition once per version in each worker process.

    The parsed drill is frozen and equal across tasks, so the grading module's reference
    cache (keyed by version and seed) hits for every later submission of the day.
    """
    from graders.drills.schema import parse_drill

    return parse_drill(definition, source_path)


@dataclass(frozen=True)
class Outcome:
    """What the task does next: nothing (a verdict is stored or someone else has it) or retry."""

    status: str
    retry_in: float | None = None


def finish_submission(
    sub: Submission, token: str, verdict: dict[str, Any], *, worker: str, device: str, grading_ms: int
) -> bool:
    """running -> final, only for the holder of the claim."""
    status = verdict.get("status")
    if status not in FINAL_STATUSES:
        verdict = internal_error_verdict(f"the grader returned the unknown status {status!r}")
        status = Status.INTERNAL_ERROR
    changed = Submission.objects.filter(pk=sub.pk, status=Status.RUNNING, claim_token=token).update(
        status=status,
        verdict=verdict,
        finished_at=timezone.now(),
        grading_ms=grading_ms,
        worker=worker[:200],
        device=device[:16],
        drill_version=sub.drill.version,
    )
    release_claim(token)
    if changed == 1:
        _announce(sub, str(status))
    return changed == 1


def _announce(sub: Submission, status: str) -> None:
    results = verdict_recorded.send_robust(
        sender=Submission,
        submission_id=sub.pk,
        user_id=sub.user_id,
        drill_id=sub.drill_id,
        kind=sub.kind,
        seed=sub.seed,
        status=status,
    )
    for receiver, result in results:
        if isinstance(result, Exception):
            logger.error("verdict_recorded receiver %r failed for submission %s: %r", receiver, sub.pk, result)


def process_submission(submission_id: int, runner: Runner, *, worker: str, device: str) -> Outcome:
    """Claim, grade, record. A learner's broken code is a verdict; only our failures retry."""
    claim = claim_submission(submission_id)
    if claim.submission is None:
        return Outcome(claim.reason, claim.retry_in)
    try:
        return _grade_claimed(claim.submission, claim.token, runner, worker=worker, device=device)
    finally:
        # Even when the database write itself failed: a retry in this process must see the claim
        # as dead (not as a live one to wait for) and take it over.
        release_claim(claim.token)


def _grade_claimed(sub: Submission, token: str, runner: Runner, *, worker: str, device: str) -> Outcome:
    started = time.perf_counter()
    try:
        from graders.grading import grade

        spec = drill_spec(sub.drill.slug, sub.drill.version, sub.drill.definition, sub.drill.source_path)
        verdict = dict(grade(spec, sub.code, seed=sub.seed, runner=runner, visible_only=not sub.is_attempt))
    except Exception:
        logger.exception("grading submission %s failed", sub.pk)
        return _after_infrastructure_error(sub, token, traceback.format_exc(limit=5))
    if verdict.get("status") == Status.INTERNAL_ERROR:
        return _after_infrastructure_error(sub, token, str(verdict.get("message", "internal error")))
    grading_ms = round((time.perf_counter() - started) * 1000)
    ran_on = str(verdict.get("device") or device)
    if not finish_submission(sub, token, verdict, worker=worker, device=ran_on, grading_ms=grading_ms):
        logger.warning("submission %s lost its claim while grading; the verdict was dropped", sub.pk)
        return Outcome("raced")
    return Outcome(str(verdict["status"]))


def _after_infrastructure_error(sub: Submission, token: str, message: str) -> Outcome:
    """Retry with the row back in QUEUED, or record internal_error once attempts run out."""
    if sub.attempts >= settings.GRADER_MAX_ATTEMPTS:
        verdict = internal_error_verdict(message[-2000:])
        finish_submission(sub, token, verdict, worker="", device="", grading_ms=0)
        return Outcome(Status.INTERNAL_ERROR)
    requeue_claim(sub.pk, token)
    return Outcome("retry", retry_in=float(2**sub.attempts))


def record_task_failure(submission_id: int, message: str) -> bool:
    """The task itself failed for good (time limit, retries exhausted): record internal_error."""
    sub = Submission.objects.filter(pk=submission_id).first()
    if sub is None or sub.is_final:
        return False
    changed = Submission.objects.filter(pk=sub.pk, status=sub.status, claim_token=sub.claim_token).update(
        status=Status.INTERNAL_ERROR, verdict=internal_error_verdict(message[-2000:]), finished_at=timezone.now()
    )
    if sub.claim_token:
        release_claim(sub.claim_token)
    if changed == 1:
        _announce(sub, Status.INTERNAL_ERROR)
    return changed == 1


# ----------------------------------------------------------------------------------- reaper


def reap_submissions(*, now: datetime | None = None) -> int:
    """Re-send rows whose message was lost: stale RUNNING claims and long-QUEUED rows.

    A duplicate message is harmless (the claim decides), so this may run as often as wanted.
    """
    now = now or timezone.now()
    before = now - timedelta(seconds=settings.GRADER_STALE_AFTER)
    rows = Submission.objects.filter(
        Q(status=Status.RUNNING, claimed_at__lt=before) | Q(status=Status.QUEUED, queued_at__lt=before)
    ).values_list("pk", "drill__device")
    count = 0
    for pk, device in rows.iterator():
        enqueue(pk, settings.GRADER_QUEUE_GPU if device == "cuda" else settings.GRADER_QUEUE_CPU)
        count += 1
    if count:
        logger.warning("re-sent %d stuck submissions", count)
    return count
