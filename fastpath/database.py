"""Whether a database answers: ``SELECT 1`` on its connection (the health check's ``database``)."""

from __future__ import annotations

from django.db import connections


def ping(alias: str = "default") -> None:
    """Runs one trivial statement; raises whatever the driver raises when the database does not answer."""
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
