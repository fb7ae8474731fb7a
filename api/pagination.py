"""Page-number pagination: ``?page=2&page_size=100``, answered as ``{count, next, previous, results}``."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request


class Pagination(PageNumberPagination):
    """A `page` or `page_size` that is not a positive integer is a 400 (DRF would silently use the
    default); a `page_size` above `max_page_size` is capped; a page past the end is DRF's 404."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request: Request) -> int | None:
        for name in (self.page_query_param, self.page_size_query_param):
            raw = request.query_params.get(name)
            if raw is not None and not (raw.isascii() and raw.isdigit() and int(raw) > 0):
                raise ValidationError({name: [_("Must be a positive integer.")]})
        return super().get_page_size(request)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["description"] = f"Results per page (default {self.page_size}, at most {self.max_page_size})."
        return parameters
