from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from quizsite.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("cards.account_urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("teams/", include("teams.urls")),
    path("courses/", include("courses.urls")),
    path("outputs/", include("outputs.urls")),
    path("drills/", include("graders.urls")),
    path("api/", include("api.urls")),
    path("", include("cards.urls")),
]
