"""The grader suite's fixtures (a real Celery worker on Redis), for the team course's output cards."""

from __future__ import annotations

from tests.graders.conftest import workers

__all__ = ["workers"]
