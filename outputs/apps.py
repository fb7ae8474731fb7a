from __future__ import annotations

from django.apps import AppConfig


class OutputsConfig(AppConfig):
    """Output cards ("what does this print?"): their snippet runs, the answer box and the notes check."""

    name = "outputs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The snippet run job kind (graders.jobs runs it by name), and the answer box on output cards.
        from cards import extensions

        from . import runs  # noqa: F401

        extensions.register_review_part("output", "outputs/snippets/output_answer.html")
