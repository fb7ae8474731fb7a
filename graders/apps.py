from __future__ import annotations

from django.apps import AppConfig


class GradersConfig(AppConfig):
    name = "graders"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The job kinds (graders.jobs runs them by name) and the worker-process hooks (they fire only
        # in Celery workers: a warm sandbox pool and a heartbeat in each process that runs jobs).
        from . import examples, verdicts, worker  # noqa: F401
