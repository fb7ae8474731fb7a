"""The login page, ahead of django.contrib.auth's own (quizsite/urls.py): it restores the learner's language."""

from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [path("login/", views.LoginView.as_view(), name="login")]
