"""``{{ verdict.message|verdict_text }}``: a stored verdict in the interface language (graders.web.verdict_text)."""

from __future__ import annotations

from django import template

from graders.web import verdict_text as text

register = template.Library()


@register.filter
def verdict_text(value: object) -> str:
    """Autoescaped like any variable: the translation adds no markup, and the learner's own text stays text."""
    return text.translate(str(value)) if value is not None else ""


@register.filter
def mismatch_title(kind: object) -> str:
    return text.mismatch_title(str(kind))
