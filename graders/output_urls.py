from __future__ import annotations

from django.urls import path

from graders import output_views

app_name = "outputs"

urlpatterns = [
    path("<uuid:card_uuid>/answer/", output_views.answer, name="answer"),
    path("<uuid:card_uuid>/prepare/", output_views.prepare, name="prepare"),
    path("notes-check/", output_views.notes_check, name="notes_check"),
]
