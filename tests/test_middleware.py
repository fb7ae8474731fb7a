"""A lost database becomes a 503 page (not a 500), rendered without touching the database again."""

from __future__ import annotations

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.test import SimpleTestCase, override_settings
from django.urls import path


def database_gone(request: HttpRequest) -> HttpResponse:
    raise OperationalError("could not connect to server: Connection refused (db:5432)")


def connection_closed(request: HttpRequest) -> HttpResponse:
    raise InterfaceError("connection already closed")


def other_error(request: HttpRequest) -> HttpResponse:
    raise ValueError("a bug")


urlpatterns = [
    path("gone/", database_gone),
    path("closed/", connection_closed),
    path("bug/", other_error),
]


@override_settings(ROOT_URLCONF=__name__)
class DatabaseUnavailableTests(SimpleTestCase):
    """SimpleTestCase: no database is available here, so the page cannot have queried one."""

    def test_it_turns_operational_errors_into_a_503_page(self) -> None:
        with self.assertLogs("quizsite.middleware", "ERROR") as logs:
            response = self.client.get("/gone/")
        assert response.status_code == 503
        assert response["Retry-After"] == "30" and response["Cache-Control"] == "no-store"
        assert b"temporarily unavailable" in response.content and b"db:5432" not in response.content
        assert "database unavailable on GET /gone/" in logs.output[0]

    def test_it_turns_interface_errors_into_a_503_page(self) -> None:
        with self.assertLogs("quizsite.middleware", "ERROR"):
            assert self.client.get("/closed/").status_code == 503

    def test_it_leaves_other_errors_alone(self) -> None:
        self.client.raise_request_exception = False
        with self.assertLogs("django.request", "ERROR"):
            assert self.client.get("/bug/").status_code == 500
