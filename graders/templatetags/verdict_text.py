"""``{{ verdict.message|verdict_text }}``: a stored verdict in the interface language (graders.web.verdict_text)."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from graders.web import verdict_text as text

register = template.Library()


@register.filter
def verdict_text(value: object) -> str:
    """Autoescaped like any variable: the translation adds no markup, and the learner's own text stays text."""
    return text.translate(str(value)) if value is not None else ""


_INLINE_CODE = re.compile(r"`([^`\n]+)`")


@register.filter
def verdict_html(value: object) -> SafeString:
    """``verdict_text`` escaped, with each backticked span (the core's way of naming code: `x`, `torch.where`)
    shown as ``<code>`` rather than as literal backticks; nothing else of the text becomes markup."""
    return mark_safe(_INLINE_CODE.sub(r"<code>\1</code>", escape(verdict_text(value))))  # noqa: S308 (escaped first)


@register.filter
def mismatch_title(kind: object) -> str:
    return text.mismatch_title(str(kind))
