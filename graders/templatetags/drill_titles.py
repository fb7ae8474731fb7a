"""A drill title's Markdown on every page that names the drill (headings, breadcrumbs, the window title):
rendered inline in the page, plain text in ``<title>``, never raw backticks or asterisks."""

from __future__ import annotations

from django import template
from django.utils.html import strip_tags
from django.utils.safestring import SafeString, mark_safe

from graders.web.hub import title_html

register = template.Library()


@register.filter
def drill_title(title: str) -> SafeString:
    """Inline HTML; ``title_html`` sanitises it (``cards.rendering.render_markdown``)."""
    return mark_safe(title_html(title))  # sanitised by render_markdown, so safe to mark


@register.filter
def drill_title_text(title: str) -> str:
    """Plain text, for ``<title>`` and attributes (escaped again by the template)."""
    return strip_tags(title_html(title))
