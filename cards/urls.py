from __future__ import annotations

from django.urls import path

from . import views

app_name = "cards"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
]
