"""The jobs app at the base (issue 40): what other apps register with it, and requeuing through the lifecycle."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.apps import apps
from django.utils import timezone

from jobs import lifecycle, pools
from jobs.models import GraderHeartbeat
from jobs.status import Status
from jobs.tasks import reap
from outputs import runs
from outputs.models import SnippetRun
from tests.outputs.test_verify import finish, import_note


def test_the_heartbeats_belong_to_the_jobs_app_and_keep_their_table() -> None:
    assert apps.get_model("jobs", "GraderHeartbeat") is GraderHeartbeat
    assert GraderHeartbeat._meta.db_table == "graders_graderheartbeat"  # no data moved with the model


def test_cards_registers_the_fsrs_fits_sweep_and_graders_the_pool() -> None:
    assert "fsrs_fit" in lifecycle._SWEEPS
    assert pools._source is not None


@pytest.mark.django_db
def test_the_reaper_runs_every_sweep_and_one_that_fails_leaves_the_others_to_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []

    def broken(now: datetime) -> int:
        raise RuntimeError("a sweep's bug")

    def counted(now: datetime) -> int:
        seen.append("ran")
        return 2

    monkeypatch.setattr(lifecycle, "_SWEEPS", {"broken": broken, "counted": counted})
    assert lifecycle.sweep_lost(timezone.now()) == 2
    reap()
    assert seen == ["ran", "ran"]


@pytest.mark.django_db
def test_rerun_sends_a_finished_job_back_to_queued_with_its_claims_counted_afresh() -> None:
    run = SnippetRun.objects.get(card=import_note())
    finish(run, "ok", "tensor([2, 4])")
    assert lifecycle.rerun(runs.SNIPPETS, run.pk)
    run.refresh_from_db()
    assert (run.status, run.claim_token, run.claimed_at, run.finished_at, run.attempts) == (
        Status.QUEUED,
        "",
        None,
        None,
        0,
    )
    assert not lifecycle.rerun(runs.SNIPPETS, run.pk + 1000)  # no such row


@pytest.mark.django_db
def test_a_run_taken_back_while_it_ran_can_no_longer_record_its_result() -> None:
    run = SnippetRun.objects.get(card=import_note())
    claimed = lifecycle.claim(runs.SNIPPETS, run.pk, timezone.now())
    assert claimed.job is not None
    assert lifecycle.rerun(runs.SNIPPETS, run.pk)
    done = lifecycle.Finished(Status.DONE, {"outcome": "ok", "output": "late", "error": ""})
    assert not lifecycle.finish(runs.SNIPPETS, claimed.job, claimed.token, done)
    run.refresh_from_db()
    assert run.status == Status.QUEUED
