from __future__ import annotations

from django.urls import path

from . import anki_views, browse_views, views

app_name = "cards"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("accounts/signup/", views.signup, name="signup"),
    path("review/", views.review, name="review"),
    path("review/undo/", views.undo, name="undo"),
    path("review/<uuid:card_uuid>/rate/", views.rate, name="rate"),
    path("review/<uuid:card_uuid>/suspend/", views.suspend, name="suspend"),
    path("review/<uuid:card_uuid>/bury/", views.bury, name="bury"),
    path("cards/<uuid:card_uuid>/edit/", views.card_edit, name="card_edit"),
    path("language/", views.set_language, name="set_language"),
    path("settings/", views.settings_view, name="settings"),
    path("settings/scheduler/", views.switch_scheduler, name="switch_scheduler"),
    path("settings/workload/", views.workload, name="workload"),
    path("settings/optimise/", views.optimise, name="optimise"),
    path("notes/<slug:slug>/", views.note_detail, name="note"),
    path("decks/", browse_views.decks, name="decks"),
    path("decks/learning-order/default/", browse_views.default_order, name="default_order"),
    path("decks/<slug:slug>/", browse_views.deck, name="deck"),
    path("cards/<uuid:card_uuid>/", browse_views.card_detail, name="card"),
    path("stats/", browse_views.stats, name="stats"),
    path("stats/revlog.csv", browse_views.revlog_export, name="revlog_export"),
    path("stats/history/import/", browse_views.history_import, name="history_import"),
    path("stats/calibration/", browse_views.calibration, name="calibration"),
    path("anki/export/", anki_views.anki_export, name="anki_export"),
    path("anki/import/", anki_views.anki_import, name="anki_import"),
]
