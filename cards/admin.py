"""Admin for the review models: read-mostly views to inspect a learner's schedule and history."""

from __future__ import annotations

from django.contrib import admin

from cards.models import CardState, Profile, ReviewLog


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "time_zone", "day_start_hour", "new_cards_per_day", "reviews_per_day"]
    search_fields = ["user__username"]


@admin.register(CardState)
class CardStateAdmin(admin.ModelAdmin):
    list_display = ["user", "card", "due", "interval", "repetitions", "easiness", "lapses", "suspended"]
    list_filter = ["suspended", "needs_repeat"]
    search_fields = ["user__username", "card__front"]
    raw_id_fields = ["user", "card"]
    readonly_fields = ["version"]


@admin.register(ReviewLog)
class ReviewLogAdmin(admin.ModelAdmin):
    """Append-only: the log is the source of truth for stats, so the admin cannot edit it."""

    list_display = ["reviewed_at", "user", "card", "quality", "source", "is_same_day_repeat", "duration_ms"]
    list_filter = ["source", "is_same_day_repeat", "quality"]
    search_fields = ["user__username"]
    raw_id_fields = ["user", "card"]
    date_hierarchy = "reviewed_at"

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False

    def has_add_permission(self, request: object) -> bool:
        return False
