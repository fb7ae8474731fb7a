"""Every API error has one shape: ``{"error": {"code": ..., "message": ..., "details": ...}}``.

Clients branch on ``code`` (a stable snake_case word such as ``not_authenticated``, ``invalid``,
``not_found``, ``throttled``, ``already_recorded``), show ``message`` to people, and read per-field
problems from ``details`` (a dict of field -> list of messages for ``invalid``, else null).
"""

from __future__ import annotations

from typing import Any, TypedDict

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, JsonResponse
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler


class ErrorBody(TypedDict):
    code: str
    message: str
    details: Any


class Conflict(exceptions.APIException):
    """The request was understood but the resource's state forbids it (a stale review version, say)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = gettext_lazy("The request conflicts with the current state.")
    default_code = "conflict"


def error_body(code: str, message: str, details: Any = None) -> dict[str, ErrorBody]:
    return {"error": ErrorBody(code=code, message=message, details=details)}


def _describe(exc: exceptions.APIException) -> ErrorBody:
    """Validation errors keep DRF's per-field detail; every other error is one code and one message."""
    if isinstance(exc, exceptions.ValidationError):
        details = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        return ErrorBody(code="invalid", message=gettext("The request is not valid; see details."), details=details)
    codes = exc.get_codes()
    code = codes if isinstance(codes, str) else exc.default_code
    return ErrorBody(code=str(code), message=str(exc.detail), details=None)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler (status, WWW-Authenticate, Retry-After), then our shape.

    Django's Http404 and PermissionDenied become DRF's own exceptions first, so they get codes too.
    """
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return None  # a bug of ours: Django's 500 handling, logging and error mail apply
    body = _describe(exc)
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        body["details"] = {"retry_after_seconds": int(exc.wait)}
    response.data = {"error": body}
    return response


@csrf_exempt  # it changes nothing; without this a POST to an unknown URL got Django's HTML CSRF page instead
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown URLs under /api/v1/ answer in the API's shape rather than with Django's HTML page."""
    return JsonResponse(error_body("not_found", gettext("No such API endpoint.")), status=404)
