from __future__ import annotations

from django.apps import AppConfig


class CoursesConfig(AppConfig):
    name = "courses"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from teams import extensions

        from .overview import team_section

        # The team page shows the team's course to its members, with upload and export for its editors.
        extensions.register_team_section("course", "courses/snippets/team_course.html", team_section)
