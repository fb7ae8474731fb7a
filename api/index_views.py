"""``/api/``: a JSON index of the API, for a person or a tool that opens the root first
(it was Django's DEBUG 404 page listing every URL of the site)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

# The collections a client starts from; the rest are reached from these (a deck's cards, a team's board).
ENTRY_POINTS = ("decks", "cards", "next-card", "reviews", "stats", "drills", "submissions", "teams")


@require_GET
def index(request: HttpRequest) -> JsonResponse:
    """Where the docs, the schema, the token and each collection are, as absolute URLs."""

    def url(name: str) -> str:
        return request.build_absolute_uri(reverse(f"api:{name}"))

    return JsonResponse(
        {
            "name": "quizsite API",
            "version": "v1",
            "docs": url("docs"),
            "schema": url("schema"),
            "token": url("token"),
            "authentication": "POST username and password to `token`, then send `Authorization: Token <key>`.",
            "endpoints": {name: url(name) for name in ENTRY_POINTS},
        }
    )
