from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from quizsite.health import healthz
from quizsite.throttle import ThrottledAdminAuthenticationForm

# The admin's login form counts failures like the site's (quizsite.throttle).
admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    # The login page (failures throttled per account and per address: quizsite.throttle; the learner's language
    # restored: cards.views.LoginView), listed before django.contrib.auth.urls, whose own "login" it replaces.
    path("accounts/", include("cards.account_urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("teams/", include("teams.urls")),
    path("courses/", include("courses.urls")),
    path("outputs/", include("outputs.urls")),
    path("drills/", include("graders.urls")),
    path("api/", include("api.urls")),
    # The API token page lives among the settings pages; the api app owns it (api/token_pages.py).
    path("settings/token/", include("api.token_urls")),
    path("", include("cards.urls")),
]
