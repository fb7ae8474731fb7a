from __future__ import annotations

from django.apps import AppConfig


class GradersConfig(AppConfig):
    name = "graders"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The verdict_recorded receiver that rates an accepted drill (runs in the worker), and the
        # task that computes the examples' expected outputs (registered with Celery on import).
        from . import examples, reviews  # noqa: F401
