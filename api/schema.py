"""OpenAPI details drf-spectacular cannot infer: the error responses every operation may give."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable snake_case code, e.g. not_authenticated, invalid, not_found.")
    message = serializers.CharField(help_text="A sentence for people.")
    details = serializers.JSONField(
        allow_null=True, help_text="For invalid: field -> list of messages. For throttled: retry_after_seconds."
    )


class ErrorSerializer(serializers.Serializer):
    """The body of every error response (see api.exceptions)."""

    error = ErrorDetailSerializer()


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


class ApiAutoSchema(AutoSchema):
    """Adds the shared error responses, so clients (and schemathesis) know every status they may see.

    401 and 429 everywhere (a wrong token is refused even where no sign-in is needed), 403 on writes
    (CSRF, with a session), 404 with a path id or a page number, and 400 with a body or query parameters.
    """

    def _get_response_bodies(self, direction: str = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        extra = {
            "401": "No valid token or session.",
            "429": "Too many requests: see details.retry_after_seconds.",
        }
        paginated = self._is_list_view() and self._get_paginator() is not None
        if "{" in self.path or paginated:
            extra["404"] = "No such object, not yours, or no such page."
        if self.method in ("POST", "PUT", "PATCH", "DELETE"):
            extra["403"] = "Signed in by session but without the CSRF token."
        if self.method in ("POST", "PUT", "PATCH") or paginated or self.get_override_parameters():
            extra["400"] = "Invalid input: details lists the fields."
        for code, description in extra.items():
            if code not in responses:
                responses[code] = self._get_response_for_code(error(description), code, direction=direction)
        return dict(sorted(responses.items()))
