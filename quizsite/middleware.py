"""Turn a lost database into a clear 503 page.

Why: when PostgreSQL restarts or fails over, every view raises ``OperationalError``; Django's
default is a 500 page and an error report per request, which tells the learner that something is
broken in the site rather than that it will be back shortly, and tells a load balancer nothing.
A 503 with ``Retry-After`` says "temporarily unavailable" to both. The page is rendered without a
request context, because the context processors (``user``) would query the database again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 30


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.error("database unavailable on %s %s: %s", request.method, request.path, exception)
        return database_unavailable_response()


def database_unavailable_response() -> HttpResponse:
    body = render_to_string("503.html", {"retry_after": RETRY_AFTER_SECONDS})
    response = HttpResponse(body, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response
