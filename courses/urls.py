from __future__ import annotations

from django.urls import path  # noqa: F401 (the course pages register here)

app_name = "courses"

urlpatterns: list = []
