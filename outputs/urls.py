from __future__ import annotations

from django.urls import path

from outputs import views

app_name = "outputs"

urlpatterns = [
    path("<uuid:card_uuid>/answer/", views.answer, name="answer"),
    path("<uuid:card_uuid>/prepare/", views.prepare, name="prepare"),
    path("notes-check/", views.notes_check, name="notes_check"),
]
