"""Logging filters named by ``settings.LOGGING``: read by every process that configures Django's logging."""

from __future__ import annotations

import logging
from collections.abc import Iterable

# celery.beat's own words for each task it sends (celery/beat.py), logged at INFO.
SENDING_DUE_TASK = "Scheduler: Sending due task %s (%s)"


class RoutineBeatTicks(logging.Filter):
    """Beat's sends of the interval jobs (``names``: the refresh of touched days, once a second; the reaper) at
    DEBUG: at INFO they were 72 % of `make run`'s terminal after 24 minutes, around the lines that matter. The
    clock jobs (digests, seasons, the nightly ones) stay at INFO; LOG_LEVEL=DEBUG shows every tick again."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        super().__init__()
        self.names = frozenset(names)

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg != SENDING_DUE_TASK or not args or args[0] not in self.names:
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
