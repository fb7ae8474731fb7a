from __future__ import annotations

from django.apps import AppConfig


class JobsConfig(AppConfig):
    """The job system at the base of the apps: every other app may build on it; it names none of them."""

    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # /healthz: the Celery workers answer, and every grading queue has a live grader (the heartbeats).
        from quizsite import health as site_health

        from . import health, tasks  # noqa: F401  (the Celery tasks: run_job and the reaper)

        site_health.register_check("celery", health.check_celery)
        site_health.register_check("graders", health.check_graders)
