"""One date format across the pages (issue 38): every date a page shows goes through Django's localized
DATE_FORMAT / DATETIME_FORMAT ("Dec. 7, 2026" in English, "2026年12月7日" in Chinese), never a fixed "Y-m-d";
a fixed format stays only where a machine reads it (a <time datetime="..."> attribute)."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from django.conf import settings
from django.template import Context, Template
from django.utils import translation

APPS = ("jobs", "cards", "graders", "teams", "courses", "outputs", "api", "templates")
# A |date filter with a literal format that has a year in it: a date written out in full, by hand.
FIXED = re.compile(r"""\|date:(["'])(?P<format>[^"']*[Yy][^"']*)\1""")


def test_no_page_writes_a_full_date_in_a_fixed_format() -> None:
    found = []
    for app in APPS:
        for path in sorted((Path(settings.BASE_DIR) / app).rglob("*.html")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                for match in FIXED.finditer(line):
                    if not re.search(r'datetime="[^"]*$', line[: match.start()]):  # a machine-read attribute
                        found.append(f"{path.relative_to(settings.BASE_DIR)}:{number}: {match.group('format')}")
    assert found == []


def test_the_localized_format_follows_the_language() -> None:
    template = Template('{{ day|date:"DATE_FORMAT" }}')
    day = date(2026, 12, 7)
    with translation.override("en"):
        assert template.render(Context({"day": day})) == "Dec. 7, 2026"
    with translation.override("zh-hans"):
        assert template.render(Context({"day": day})) == "2026年12月7日"
