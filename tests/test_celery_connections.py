"""Database connections around Celery tasks: kept while they work, dropped like Django drops them.

Celery's Django fixup closed every connection around every task, so each verdict paid for a new
one (on PostgreSQL a new backend process). ``quizsite.celery.close_old_connections`` applies
Django's per-request rule instead.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from celery.signals import task_postrun, task_prerun
from django.db import connection

from quizsite.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def task(eager: bool = False) -> SimpleNamespace:
    return SimpleNamespace(request=SimpleNamespace(is_eager=eager))


def around_a_task(eager: bool = False) -> None:
    task_prerun.send(sender=None, task_id="t", task=task(eager), args=(), kwargs={})
    task_postrun.send(sender=None, task_id="t", task=task(eager), args=(), kwargs={}, retval=None, state="SUCCESS")


def test_a_working_connection_is_kept_from_task_to_task() -> None:
    connection.ensure_connection()
    raw = connection.connection
    around_a_task()
    around_a_task()
    assert connection.connection is raw


def closable() -> None:
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip("Django never closes an in-memory SQLite database (the suite's PostgreSQL run covers this)")


def test_a_connection_past_its_max_age_is_closed() -> None:
    closable()
    connection.ensure_connection()
    connection.close_at = time.monotonic() - 1
    around_a_task()
    assert connection.connection is None


def test_a_broken_connection_is_closed_before_the_next_task(monkeypatch: pytest.MonkeyPatch) -> None:
    closable()
    connection.ensure_connection()
    connection.errors_occurred = True
    monkeypatch.setattr(connection, "is_usable", lambda: False)
    around_a_task()
    assert connection.connection is None


def test_an_eager_task_never_closes_its_callers_connection() -> None:
    connection.ensure_connection()
    connection.close_at = time.monotonic() - 1
    raw = connection.connection
    around_a_task(eager=True)
    assert connection.connection is raw


def test_celerys_own_close_around_every_task_is_turned_down() -> None:
    assert app.conf.get("CELERY_DB_REUSE_MAX", 0) >= 100
