"""The site has a favicon (issue 38): a small SVG in static/, linked from the base template, served by whitenoise."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client


@pytest.mark.django_db
def test_every_page_links_a_static_svg_favicon(client: Client) -> None:
    page = client.get("/accounts/login/").content.decode()
    link = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', page)
    assert link, "no SVG favicon linked from the base template"
    href = link.group(1)
    assert href.startswith("/static/") and href.endswith(".svg")
    found = finders.find(href.removeprefix("/static/"))
    assert found, f"{href} is not a static file"
    with open(found, encoding="utf-8") as svg:
        text = svg.read()
    assert text.lstrip().startswith("<svg") and len(text) < 2000
