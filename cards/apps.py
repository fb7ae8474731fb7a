from __future__ import annotations

from django.apps import AppConfig


class CardsConfig(AppConfig):
    name = "cards"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # An FSRS fit is background work that can be lost (its worker killed mid-fit): the job reaper gives up
        # the lost ones (jobs.lifecycle.register_sweep), so the learner's one active fit is free again.
        from jobs import lifecycle

        from .optimising import expire_lost

        lifecycle.register_sweep("fsrs_fit", expire_lost)
