"""The decks page and the drill hub filter by course, offering only the courses the learner may read."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.urls import reverse

from cards.models import bundled_course
from courses.folders import import_folder
from tests.cards.factories import make_card, make_note
from tests.courses.base import CourseTestCase, write_course


class FilterTests(CourseTestCase):
    def setUp(self) -> None:
        bundled = make_note(slug="pytorch-basics", title="PyTorch basics", course=bundled_course())
        make_card(note=bundled)
        import_folder(write_course(Path(tempfile.mkdtemp()) / "c"), self.fresh_team())
        self.course = self.fresh_team().course

    def test_the_decks_page_filters_by_a_readable_course(self) -> None:
        self.client.force_login(self.member)
        page = self.client.get(reverse("cards:decks"))
        self.assertContains(page, f'<option value="{self.course.slug}"')
        self.assertContains(page, "PyTorch basics")
        page = self.client.get(reverse("cards:decks"), {"course": self.course.slug})
        self.assertNotContains(page, "PyTorch basics")
        self.assertContains(page, "自动求导")
        page = self.client.get(reverse("cards:decks"), {"course": "pytorch"})
        self.assertContains(page, "PyTorch basics")
        self.assertNotContains(page, "自动求导")

    def test_the_decks_page_never_offers_or_shows_another_teams_course(self) -> None:
        self.client.force_login(self.outsider)
        page = self.client.get(reverse("cards:decks"), {"course": self.course.slug})
        self.assertNotContains(page, f'<option value="{self.course.slug}"')
        self.assertNotContains(page, f"/decks/{self.course.slug}--")
        self.assertNotContains(page, "自动求导")
        self.assertContains(page, "PyTorch basics")  # an unknown course: every deck the learner may read

    def test_the_hub_filters_by_course(self) -> None:
        self.client.force_login(self.member)
        page = self.client.get(reverse("graders:hub"), {"course": self.course.slug})
        self.assertContains(page, "Scale by three")
        self.assertContains(page, "data-course-filter")
        page = self.client.get(reverse("graders:hub"), {"course": "pytorch"})
        self.assertNotContains(page, "Scale by three")
        self.client.force_login(self.outsider)
        page = self.client.get(reverse("graders:hub"), {"course": self.course.slug})
        self.assertNotContains(page, "Scale by three")
        self.assertNotContains(page, f'<option value="{self.course.slug}"')
