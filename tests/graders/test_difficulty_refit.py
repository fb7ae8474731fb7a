"""The difficulty refit job: first attempts from submissions, one fitted row per drill, labels flagged."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from graders.difficulty import refit, task
from graders.models import Drill, DrillDifficulty, LearnerSkill, Submission
from jobs.status import Status
from tests.graders.conftest import drill_text, graded_submission

pytestmark = pytest.mark.django_db

START = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.get_current_timezone())


def drills(make_drill: Callable[..., Drill], labels: list[str]) -> list[Drill]:
    made = []
    for i, label in enumerate(labels):
        drill = make_drill(drill_text().replace('slug = "add-one"', f'slug = "d-{i}"'))
        drill.difficulty = label
        drill.save(update_fields=["difficulty"])
        made.append(drill)
    return made


def learners(count: int) -> list[User]:
    return [User.objects.create_user(f"l{i}") for i in range(count)]


def first_tries(users: list[User], drill: Drill, passing: int) -> None:
    """Each user's first attempt on ``drill``: the first ``passing`` users accepted, the rest wrong, then accepted."""
    for i, user in enumerate(users):
        at = START + timedelta(minutes=i)
        graded_submission(user, drill, Status.ACCEPTED if i < passing else Status.WRONG_ANSWER, at)
        graded_submission(user, drill, Status.ACCEPTED, at + timedelta(seconds=30))  # a later try: never counted


@override_settings(DIFFICULTY_MIN_ATTEMPTS=20)
def test_it_stores_each_drills_fit_and_flags_a_label_the_learners_disagree_with(
    make_drill: Callable[..., Drill],
) -> None:
    easy, medium, mislabelled = drills(make_drill, ["easy", "medium", "easy"])
    users = learners(30)
    first_tries(users, easy, passing=28)
    first_tries(users, medium, passing=15)
    first_tries(users, mislabelled, passing=2)
    done = task.refit_difficulty.run()
    assert done == 3
    rows = {row.drill_id: row for row in DrillDifficulty.objects.all()}
    assert [rows[d.pk].passed for d in (easy, medium, mislabelled)] == [28, 15, 2]
    assert all(rows[d.pk].attempts == 30 for d in (easy, medium, mislabelled))
    assert rows[easy.pk].difficulty < rows[medium.pk].difficulty < rows[mislabelled.pk].difficulty
    assert [rows[d.pk].band for d in (easy, medium, mislabelled)] == ["easy", "medium", "hard"]
    assert [rows[d.pk].quantile for d in (easy, medium, mislabelled)] == [0.0, 0.5, 1.0]
    assert rows[mislabelled.pk].disagreement == DrillDifficulty.Disagreement.HARDER
    assert rows[easy.pk].disagreement == rows[medium.pk].disagreement == DrillDifficulty.Disagreement.AGREES
    assert all(0 < row.standard_error < 1 for row in rows.values())


@override_settings(DIFFICULTY_MIN_ATTEMPTS=20)
def test_a_refit_replaces_the_rows_and_shows_nothing_below_the_minimum(make_drill: Callable[..., Drill]) -> None:
    (drill,) = drills(make_drill, ["medium"])
    users = learners(25)
    first_tries(users[:10], drill, passing=5)
    refit.refit(timezone.now())
    row = DrillDifficulty.objects.get(drill=drill)
    assert (row.attempts, row.band, row.quantile, row.shown) == (10, "", None, False)
    first_tries(users[10:], drill, passing=15)
    refit.refit(timezone.now())
    row.refresh_from_db()
    assert (row.attempts, row.passed, row.band, row.shown) == (25, 20, "medium", True)
    assert DrillDifficulty.objects.count() == 1


def test_it_stores_each_learners_skill_from_the_same_fit_and_drops_learners_no_longer_in_it(
    make_drill: Callable[..., Drill],
) -> None:
    made = drills(make_drill, ["easy", "medium", "hard"])
    strong, weak, gone = learners(3)
    for drill in made:
        graded_submission(strong, drill, Status.ACCEPTED, START)
        graded_submission(weak, drill, Status.WRONG_ANSWER, START)
    LearnerSkill.objects.create(user=gone, skill=3.0, attempts=9, passed=9, fitted_at=START)  # an older fit's
    now = timezone.now()
    refit.refit(now)
    skills = {row.user_id: row for row in LearnerSkill.objects.all()}
    assert set(skills) == {strong.pk, weak.pk}
    assert (skills[strong.pk].attempts, skills[strong.pk].passed) == (3, 3)
    assert (skills[weak.pk].attempts, skills[weak.pk].passed) == (3, 0)
    assert skills[strong.pk].skill > 0 > skills[weak.pk].skill
    assert skills[strong.pk].fitted_at == skills[weak.pk].fitted_at == DrillDifficulty.objects.first().fitted_at == now
    refit.refit(now, dry_run=True)
    assert LearnerSkill.objects.count() == 2


def test_the_first_attempt_is_the_first_graded_submit_not_an_internal_error_nor_a_practice_run(
    make_drill: Callable[..., Drill],
) -> None:
    (drill,) = drills(make_drill, ["medium"])
    ours, practised, pending, rejected = learners(4)
    graded_submission(ours, drill, Status.INTERNAL_ERROR, START)  # ours: skipped, the next one is the first
    graded_submission(ours, drill, Status.ACCEPTED, START + timedelta(minutes=1))
    graded_submission(practised, drill, Status.ACCEPTED, START, kind="examples")  # practice: never an attempt
    graded_submission(practised, drill, Status.WRONG_ANSWER, START + timedelta(minutes=1))
    graded_submission(practised, drill, Status.ACCEPTED, START + timedelta(minutes=2))
    Submission.objects.create(user=pending, drill=drill, code="x", seed=1, drill_version=drill.version, queued_at=START)
    graded_submission(pending, drill, Status.ACCEPTED, START + timedelta(minutes=1))  # not their first
    graded_submission(rejected, drill, Status.REJECTED, START)  # the learner's code: a failed first attempt
    found = sorted((a.learner, a.passed) for a in refit.first_attempts())
    assert found == sorted([(ours.pk, True), (practised.pk, False), (rejected.pk, False)])


def test_the_command_reports_and_a_dry_run_writes_nothing(make_drill: Callable[..., Drill], capsys) -> None:
    (drill,) = drills(make_drill, ["hard"])
    first_tries(learners(3), drill, passing=1)
    call_command("refit_difficulty", "--dry-run")
    assert "3 first attempts by 3 learners: would write 1 drills" in capsys.readouterr().out
    assert not DrillDifficulty.objects.exists()
    call_command("refit_difficulty")
    assert DrillDifficulty.objects.get(drill=drill).attempts == 3


def test_beat_sends_the_refit_nightly_to_the_scoring_worker() -> None:
    from celery import current_app
    from django.conf import settings

    entry = settings.CELERY_BEAT_SCHEDULE["graders-refit-difficulty"]
    assert entry["task"] == task.refit_difficulty.name == "graders.tasks.refit_difficulty"
    assert settings.CELERY_TASK_ROUTES[entry["task"]] == {"queue": settings.SCORING_QUEUE}
    assert entry["task"] in current_app.tasks
