from __future__ import annotations

from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The receivers keep the daily rollup and the Redis boards current on each review and verdict.
        from . import signals  # noqa: F401
