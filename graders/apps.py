from __future__ import annotations

from django.apps import AppConfig


class GradersConfig(AppConfig):
    name = "graders"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The job kinds (graders.jobs.lifecycle runs them by name), the Celery tasks (autodiscovery looks
        # for a graders.tasks module; the tasks keep that name but live in graders.jobs.tasks) and the
        # worker-process hooks (they fire only in Celery workers: a warm sandbox pool and a heartbeat in
        # each process that runs jobs).
        from cards import extensions
        from quizsite import health as site_health

        from .difficulty import task  # noqa: F401  (the nightly difficulty refit)
        from .jobs import health, tasks, worker  # noqa: F401
        from .kinds import checks, counterexamples, examples, runs, verdicts  # noqa: F401
        from .web import stats

        # Drill cards on the review page, and the drills' section of the stats page.
        extensions.register_review_part("drill", "graders/snippets/review_drill.html", replaces_answer=True)
        extensions.register_stats_section("drills", "graders/snippets/stats_drills.html", stats.drill_section)
        # A deck's "Coding drill" filter lists the note's drills in the hub (status, difficulty, best verdict).
        extensions.register_kind_listing("drill", hub_for_note)
        # /healthz: the Celery workers answer, and every grading queue has a live grader.
        site_health.register_check("celery", health.check_celery)
        site_health.register_check("graders", health.check_graders)
        # manage.py audit_cards: a bundled drill whose statement promises what its contract does not check.
        extensions.register_audit_check("drill statements that contradict their contract", drill_statement_problems)


def hub_for_note(note_slug: str) -> str:
    from django.urls import reverse
    from django.utils.http import urlencode

    return f"{reverse('graders:hub')}?{urlencode({'note': note_slug})}"


def drill_statement_problems() -> list[str]:
    """ "<drill>: <problem>" for each bundled drill's statement that contradicts its contract (a new tensor, an
    in-place change or a dtype promised), by the rule that publishing a course's drill applies."""
    from graders.authoring.statement import drill_contradictions
    from graders.drills import DRILLS_DIR, load_drills

    drills = load_drills(DRILLS_DIR)
    return [f"{slug}: {problem}" for slug, drill in sorted(drills.items()) for problem in drill_contradictions(drill)]
