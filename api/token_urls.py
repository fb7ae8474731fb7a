"""The API token page, included from quizsite.urls under ``settings/token/``; URL names ``tokens:...``."""

from __future__ import annotations

from django.urls import path

from api import token_pages

app_name = "tokens"

urlpatterns = [
    path("", token_pages.tokens, name="page"),
    path("new/", token_pages.create, name="create"),
    path("revoke/", token_pages.revoke, name="revoke"),
]
