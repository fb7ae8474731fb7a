"""Admin: read-mostly views of drills and submissions for whoever runs the site."""

from __future__ import annotations

from django.contrib import admin

from graders.models import Drill, DrillDifficulty, Submission


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


@admin.register(DrillDifficulty)
class DrillDifficultyAdmin(admin.ModelAdmin):
    """The last refit, read-only (the nightly job rewrites it): filter by disagreement for the labels to revisit."""

    list_display = (
        "drill",
        "drill__difficulty",
        "band",
        "difficulty",
        "standard_error",
        "attempts",
        "passed",
        "disagreement",
        "fitted_at",
    )
    list_filter = ("disagreement", "band", "drill__difficulty")
    search_fields = ("drill__slug",)
    list_select_related = ("drill",)
    readonly_fields = [f.name for f in DrillDifficulty._meta.fields]
