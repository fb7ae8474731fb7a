from __future__ import annotations

from django.contrib import admin

from .models import BoardPreference, DailyActivity, Membership, SeasonResult, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "time_zone", "created_at"]
    search_fields = ["name", "slug"]
    readonly_fields = ["uuid", "invite_nonce"]
    inlines = [MembershipInline]


@admin.register(BoardPreference)
class BoardPreferenceAdmin(admin.ModelAdmin):
    list_display = ["user", "global_board", "daily_digest", "last_digest_on"]
    raw_id_fields = ["user"]


@admin.register(SeasonResult)
class SeasonResultAdmin(admin.ModelAdmin):
    list_display = ["team", "season", "rank", "user", "xp", "score"]
    list_filter = ["season"]
    raw_id_fields = ["user", "team"]


@admin.register(DailyActivity)
class DailyActivityAdmin(admin.ModelAdmin):
    """Read-only: a cache of ReviewLog and Submission; rebuild_boards rewrites it."""

    list_display = ["user", "day", "xp", "reviews", "mature_reviews", "mature_passed", "drills_solved"]
    raw_id_fields = ["user"]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
