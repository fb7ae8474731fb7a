from __future__ import annotations

from django.urls import path

from . import drill_views, views

app_name = "courses"

urlpatterns = [
    path("<slug:team>/", views.course, name="course"),
    path("<slug:team>/upload/", views.upload, name="upload"),
    path("<slug:team>/uploads/<uuid:upload>/", views.upload_detail, name="upload_detail"),
    path("<slug:team>/uploads/<uuid:upload>/confirm/", views.confirm, name="confirm"),
    path("<slug:team>/uploads/<uuid:upload>/discard/", views.discard, name="discard"),
    path("<slug:team>/export.zip", views.export, name="export"),
    # A course's drills: drafts, the editor (form or TOML), check, publish (courses/drill_views.py).
    path("<slug:team>/drills/", drill_views.drill_list, name="drills"),
    path("<slug:team>/drills/new/", drill_views.drill_new, name="drill_new"),
    path("<slug:team>/drills/new/toml/", drill_views.drill_new_toml, name="drill_new_toml"),
    path("<slug:team>/drills/published/<slug:slug>/edit/", drill_views.drill_open, name="drill_open"),
    path("<slug:team>/drills/<uuid:draft>/", drill_views.drill_edit, name="drill_edit"),
    path("<slug:team>/drills/<uuid:draft>/toml/", drill_views.drill_toml, name="drill_toml"),
    path("<slug:team>/drills/<uuid:draft>/check/", drill_views.drill_check, name="drill_check"),
    path("<slug:team>/drills/<uuid:draft>/check/status/", drill_views.drill_check_status, name="drill_check_status"),
    path("<slug:team>/drills/<uuid:draft>/publish/", drill_views.drill_publish, name="drill_publish"),
    path("<slug:team>/drills/<uuid:draft>/delete/", drill_views.drill_delete, name="drill_delete"),
]
