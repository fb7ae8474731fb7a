"""``{{ card.front_html|plain_text }}``: a face's text, tags stripped and entities decoded (autoescaped once)."""

from __future__ import annotations

import html

from django import template
from django.utils.html import strip_tags

register = template.Library()


@register.filter
def plain_text(value: object) -> str:
    """``striptags`` alone left ``&gt;`` as text, which autoescaping turned into a literal "&gt;" on the page."""
    return html.unescape(strip_tags(str(value))) if value else ""
