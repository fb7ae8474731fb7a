from __future__ import annotations

from django.apps import AppConfig


class OutputsConfig(AppConfig):
    """Output cards ("what does this print?"): their snippet runs, the answer box and the notes check."""

    name = "outputs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The snippet run job kind (jobs.lifecycle runs it by name), and the answer box on output cards.
        from cards import extensions
        from cards.importing import register_verifier
        from cards.models import Card

        from . import runs  # noqa: F401
        from .verify import on_import

        extensions.register_review_part("output", "outputs/snippets/output_answer.html")
        # Output cards reach review only once the sandbox has run them (outputs.verify).
        register_verifier(Card.Kind.OUTPUT, on_import)
