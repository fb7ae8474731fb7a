from __future__ import annotations

from django.urls import path

from .web import views

app_name = "graders"

urlpatterns = [
    path("", views.hub, name="hub"),
    path("card/<uuid:card_uuid>/", views.drill_for_card, name="for_card"),
    path("submissions/<uuid:submission_uuid>/", views.submission_page, name="submission"),
    path("submissions/<uuid:submission_uuid>/status/", views.submission_status, name="submission_status"),
    path(
        "submissions/<uuid:submission_uuid>/counterexample/",
        views.submission_counterexample,
        name="submission_counterexample",
    ),
    path("runs/<uuid:run_uuid>/", views.run_page, name="run"),
    path("runs/<uuid:run_uuid>/status/", views.run_status, name="run_status"),
    path("<slug:slug>/", views.drill_page, name="drill"),
    path("<slug:slug>/submit/", views.submit, name="submit"),
    path("<slug:slug>/run/", views.run_input, name="run_input"),
    path("<slug:slug>/history/", views.history, name="history"),
    path("<slug:slug>/examples/", views.examples_fragment, name="examples"),
    path("<slug:slug>/hint/", views.hint, name="hint"),
    path("<slug:slug>/reference/", views.reference, name="reference"),
    path("<slug:slug>/give-up/", views.give_up, name="give_up"),
    path("<slug:slug>/move-on/", views.move_on, name="move_on"),
]
