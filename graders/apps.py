from __future__ import annotations

from django.apps import AppConfig


class GradersConfig(AppConfig):
    name = "graders"
    default_auto_field = "django.db.models.BigAutoField"
