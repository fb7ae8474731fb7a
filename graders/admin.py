"""Admin: read-mostly views of drills and submissions for whoever runs the site."""

from __future__ import annotations

from django.contrib import admin

from graders.models import Drill, Submission


@admin.register(Drill)
class DrillAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "device", "version", "active", "updated_at")
    list_filter = ("active", "device")
    search_fields = ("slug", "title")
    readonly_fields = ("card", "version", "source_path", "definition", "created_at", "updated_at")


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("uuid", "user", "drill", "kind", "status", "queued_at", "grading_ms", "worker", "device")
    list_filter = ("status", "kind", "device")
    search_fields = ("uuid", "user__username", "drill__slug")
    list_select_related = ("user", "drill")
    raw_id_fields = ("user", "drill")
    readonly_fields = [f.name for f in Submission._meta.fields]
