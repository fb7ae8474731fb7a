from __future__ import annotations

from django.urls import path

from . import views

app_name = "courses"

urlpatterns = [
    path("<slug:team>/", views.course, name="course"),
    path("<slug:team>/upload/", views.upload, name="upload"),
    path("<slug:team>/uploads/<uuid:upload>/", views.upload_detail, name="upload_detail"),
    path("<slug:team>/uploads/<uuid:upload>/confirm/", views.confirm, name="confirm"),
    path("<slug:team>/uploads/<uuid:upload>/discard/", views.discard, name="discard"),
    path("<slug:team>/export.zip", views.export, name="export"),
]
