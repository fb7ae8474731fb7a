from __future__ import annotations

from django.urls import path

from . import solution_views, views

app_name = "teams"

urlpatterns = [
    path("", views.index, name="index"),
    path("global/", views.global_board, name="global_board"),
    path("preferences/", views.preferences, name="preferences"),
    path("join/<str:token>/", views.join, name="join"),
    path("digest/unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
    path("digest/confirm/<str:token>/", views.confirm_digest, name="confirm_digest"),
    path("digest/confirm-again/", views.resend_digest_confirmation, name="resend_digest_confirmation"),
    # A drill's solutions (issue 41). No team slug is "solutions": every one ends in "-<hex>" (create_team).
    # Their slug names a drill, not a team (so the team-URL privacy table in tests/teams/test_views.py skips them).
    path("solutions/<slug:drill>/", solution_views.drill_solutions, name="drill_solutions"),
    path("solutions/<slug:drill>/comment/", solution_views.comment, name="solution_comment"),
    path(
        "solutions/<slug:drill>/comments/<uuid:comment>/edit/",
        solution_views.edit_comment,
        name="edit_solution_comment",
    ),
    path(
        "solutions/<slug:drill>/comments/<uuid:comment>/delete/",
        solution_views.delete_comment,
        name="delete_solution_comment",
    ),
    path("solutions/<slug:drill>/site-wide/", solution_views.site_wide, name="solutions_site_wide"),
    path("<slug:slug>/", views.detail, name="detail"),
    path("<slug:slug>/board/", views.board, name="board"),
    path("<slug:slug>/stats/", views.stats, name="stats"),
    path("<slug:slug>/leave/", views.leave, name="leave"),
    path("<slug:slug>/rename/", views.rename, name="rename"),
    path("<slug:slug>/scheduler/", views.default_scheduler, name="default_scheduler"),
    path("<slug:slug>/revlog.csv", views.revlog_export, name="revlog_export"),
    path("<slug:slug>/calibration/", views.calibration, name="calibration"),
    path("<slug:slug>/learning-order/", views.learning_order, name="learning_order"),
    path("<slug:slug>/learning-order/follow/", views.follow_order, name="follow_order"),
    path("<slug:slug>/invite/rotate/", views.rotate_invite, name="rotate_invite"),
    path("<slug:slug>/members/<uuid:member>/remove/", views.remove_member, name="remove_member"),
    path("<slug:slug>/members/<uuid:member>/transfer/", views.transfer_ownership, name="transfer_ownership"),
    path("<slug:slug>/members/<uuid:member>/role/", views.set_role, name="set_role"),
]
