"""The nightly difficulty refit as a Celery task, run by the scoring worker (``CELERY_TASK_ROUTES``) when beat sends
``graders-refit-difficulty``. Its name keeps the app's ``graders.tasks.`` prefix, as the other graders tasks do.
"""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone


@shared_task(name="graders.tasks.refit_difficulty", ignore_result=True)
def refit_difficulty() -> int:
    """Every drill's difficulty refitted from the learners' first attempts (``graders.difficulty.refit``); returns
    the drills written. A lost or repeated run is harmless: each run replaces every row from the submissions."""
    from graders.difficulty import refit  # numpy: only the worker that fits imports it

    return refit.refit(timezone.now()).drills
