"""``fastpath.database``: the health check's one statement."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import DatabaseError

from fastpath import database


@pytest.mark.django_db
def test_it_answers_when_the_database_does() -> None:
    assert database.ping("default") is None


@pytest.mark.django_db
def test_it_raises_what_the_driver_raises() -> None:
    with mock.patch("django.db.backends.utils.CursorWrapper.execute", side_effect=DatabaseError("down")):
        with pytest.raises(DatabaseError):
            database.ping("default")
