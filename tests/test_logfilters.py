"""Beat's routine ticks at DEBUG: `make run`'s terminal shows what matters, not a line a second."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from django.conf import settings

from quizsite.logfilters import SENDING_DUE_TASK, RoutineBeatTicks


@pytest.fixture
def beat_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("celery.beat")
    before = logger.level
    logger.setLevel(logging.INFO)  # `celery beat -l info`, as make run and compose start it
    yield logger
    logger.setLevel(before)


def sending(name: str) -> logging.LogRecord:
    return logging.LogRecord("celery.beat", logging.INFO, __file__, 1, SENDING_DUE_TASK, (name, "a.task"), None)


def test_it_demotes_the_interval_jobs_ticks_and_keeps_the_clock_jobs(beat_logger: logging.Logger) -> None:
    spec = settings.LOGGING["filters"]["routine_beat_ticks"]
    assert settings.LOGGING["loggers"]["celery.beat"]["filters"] == ["routine_beat_ticks"]
    assert {"teams-refresh-touched", "graders-reap"} <= set(spec["names"])
    assert "teams-daily-digest" not in spec["names"]
    routine = RoutineBeatTicks(spec["names"])
    tick, digest = sending("teams-refresh-touched"), sending("teams-daily-digest")
    assert not routine.filter(tick) and tick.levelname == "DEBUG"
    assert routine.filter(digest) and digest.levelname == "INFO"
    beat_logger.setLevel(logging.DEBUG)  # LOG_LEVEL=DEBUG: every tick shows, as DEBUG
    assert routine.filter(sending("teams-refresh-touched"))
