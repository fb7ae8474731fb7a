"""A team's course is its members' alone (issue 35): its notes and cards reach no outsider through the note
queries, the review queues or a lookup by uuid, and a learner who leaves the team stops meeting them."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from cards import review
from cards.importing import NoteFileError, NoteSource, import_notes
from cards.models import Card, Course, Note, bundled_course
from cards.review import RatingRequest
from graders.drills.schema import parse_drill
from graders.management.commands.import_drills import card_fields, card_key, drill_fields, import_drills
from graders.models import Drill, DrillRun, Submission
from graders.web.hub import hub_rows
from teams import services
from teams.models import Membership, Team
from tests.api.base import DRILL_TOML
from tests.cards.factories import make_card, make_note, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


def new_cards(user: AbstractBaseUser, limit: int = 10) -> list[Card]:
    """The cards the learner's new queue brings, rating each Good so the next one comes."""
    seen = []
    for _ in range(limit):
        item = review.next_card(user, review.get_profile(user), NOW)[0]
        if item is None or item.queue != "new":
            break
        seen.append(item.card)
        review.rate(user, review.get_profile(user), RatingRequest(item.card.uuid, 4, item.version), NOW)
    return seen


class CourseAccessTestCase(TestCase):
    """The bundled course with one card, a team's course with two; an owner, a member and an outsider."""

    def setUp(self) -> None:
        self.shared_card = make_card(note=make_note(slug="basics", course=bundled_course()), position=0)
        self.owner = make_user("olivia", time_zone="UTC")
        self.member = make_user("max", time_zone="UTC")
        self.outsider = make_user("oscar", time_zone="UTC")
        self.team = services.create_team(self.owner, "Tensor Tamers", "UTC")
        services.join(self.team, self.member)
        self.course = Course.objects.create(slug="tamers", title="Tamers' course")
        Team.objects.filter(pk=self.team.pk).update(course=self.course)
        self.note = make_note(slug=self.course.qualified("autograd"), course=self.course)
        self.team_cards = [make_card(note=self.note, position=i) for i in range(2)]


class VisibilityTests(CourseAccessTestCase):
    def test_it_shows_a_team_course_to_its_members_only(self) -> None:
        for user in (self.owner, self.member):
            self.assertIn(self.note, Note.objects.visible_to(user))
            self.assertEqual(Card.objects.visible_to(user).count(), 3)
        self.assertNotIn(self.note, Note.objects.visible_to(self.outsider))
        self.assertIn(self.note, Note.objects.hidden_from(self.outsider))
        self.assertEqual(list(Card.objects.visible_to(self.outsider)), [self.shared_card])

    def test_it_lists_the_readable_courses(self) -> None:
        self.assertEqual(set(Course.objects.readable_by(self.member)), {self.course, bundled_course()})
        self.assertEqual(list(Course.objects.readable_by(self.outsider)), [bundled_course()])

    def test_it_qualifies_a_team_course_slug_and_leaves_the_bundled_ones(self) -> None:
        self.assertEqual(self.course.qualified("autograd"), "tamers--autograd")
        self.assertEqual(self.course.unqualified("tamers--autograd"), "autograd")
        self.assertEqual(bundled_course().qualified("basics"), "basics")


class QueueTests(CourseAccessTestCase):
    def test_it_brings_a_team_course_to_members_and_never_to_outsiders(self) -> None:
        self.assertEqual(set(new_cards(self.member)), {self.shared_card, *self.team_cards})
        self.assertEqual(new_cards(self.outsider), [self.shared_card])

    def test_it_stops_due_cards_of_a_course_once_the_learner_left_its_team(self) -> None:
        new_cards(self.member)
        later = datetime(2026, 3, 20, 10, 0, tzinfo=UTC)  # every card is due again
        item = review.next_card(self.member, review.get_profile(self.member), later)[0]
        self.assertIsNotNone(item)
        Membership.objects.filter(team=self.team, user=self.member).delete()
        due = []
        for _ in range(5):
            item = review.next_card(self.member, review.get_profile(self.member), later)[0]
            if item is None:
                break
            due.append(item.card)
            profile = review.get_profile(self.member)
            review.rate(self.member, profile, RatingRequest(item.card.uuid, 4, item.version), later)
        self.assertEqual(due, [self.shared_card])


class ImportTests(TestCase):
    """import_notes writes a note into the course it is given, and never into another course's note."""

    def source(self, slug: str) -> NoteSource:
        text = "# 张量\n\n## 形状\n\n张量的形状用 `x.shape` 查看。\n"
        return NoteSource(Path(f"{slug}.md"), f"{slug}.md", slug, text)

    def test_it_puts_the_bundled_notes_in_the_bundled_course(self) -> None:
        import_notes([self.source("basics")])
        self.assertEqual(Note.objects.get(slug="basics").course, bundled_course())
        self.assertTrue(bundled_course().public)

    def test_it_puts_a_team_note_in_the_team_course(self) -> None:
        course = Course.objects.create(slug="tamers", title="Tamers")
        import_notes([self.source(course.qualified("basics"))], course=course)
        self.assertEqual(Note.objects.get(slug="tamers--basics").course, course)

    def test_it_refuses_to_write_a_note_of_another_course_and_writes_nothing(self) -> None:
        ours, theirs = (Course.objects.create(slug=s, title=s) for s in ("ours", "theirs"))
        import_notes([self.source("shared-name")], course=theirs)
        before = list(Card.objects.values_list("pk", "content_hash"))
        with self.assertRaisesMessage(NoteFileError, "belongs to another course"):
            import_notes([self.source("shared-name")], course=ours)
        self.assertEqual(list(Card.objects.values_list("pk", "content_hash")), before)
        self.assertEqual(Note.objects.get(slug="shared-name").course, theirs)


class DrillAccessTests(CourseAccessTestCase):
    """A team course's drill: its members open, list and submit it; an outsider meets a 404 everywhere."""

    def setUp(self) -> None:
        super().setUp()
        text = DRILL_TOML
        spec = parse_drill(text, "drills/autograd/add-one.toml")
        stored = self.course.qualified(spec.slug)
        card = Card.objects.create(key=card_key(stored), **card_fields(spec, self.note, 10_001))
        self.drill = Drill.objects.create(slug=stored, card=card, **drill_fields(spec, text, spec.path))

    def test_it_opens_the_drill_page_for_members_only(self) -> None:
        url = reverse("graders:drill", args=[self.drill.slug])
        self.client.force_login(self.member)
        self.assertEqual(self.client.get(url).status_code, 200)
        self.client.force_login(self.outsider)
        self.assertEqual(self.client.get(url).status_code, 404)
        by_card = self.client.get(reverse("graders:for_card", args=[self.drill.card.uuid]))
        self.assertEqual(by_card.status_code, 404)  # not a redirect that names the drill
        response = self.client.post(reverse("graders:submit", args=[self.drill.slug]), {"code": "x", "kind": "submit"})
        self.assertEqual(response.status_code, 404)
        self.assertFalse(Submission.objects.exists())

    def test_it_runs_own_input_for_members_only(self) -> None:
        """ "Run" is for the learners who can see the drill: an outsider's page post and API post are 404."""
        data = {"code": "def solution(x):\n    return x\n", "arguments": "torch.ones(2)"}
        self.client.force_login(self.outsider)
        self.assertEqual(self.client.post(reverse("graders:run_input", args=[self.drill.slug]), data).status_code, 404)
        api = APIClient()
        api.force_authenticate(self.outsider)
        self.assertEqual(api.post("/api/v1/runs/", {**data, "drill": self.drill.slug}, format="json").status_code, 404)
        self.assertFalse(DrillRun.objects.exists())
        self.client.force_login(self.member)
        response = self.client.post(reverse("graders:run_input", args=[self.drill.slug]), data)
        self.assertEqual((response.status_code, DrillRun.objects.get().user), (302, self.member))

    def test_it_lists_the_drill_on_the_hub_and_the_api_for_members_only(self) -> None:
        self.assertIn(self.drill, [row.drill for row in hub_rows(self.member, NOW.date())])
        self.assertNotIn(self.drill, [row.drill for row in hub_rows(self.outsider, NOW.date())])
        api = APIClient()
        api.force_authenticate(self.outsider)
        self.assertEqual(api.get(f"/api/v1/drills/{self.drill.slug}/").status_code, 404)
        self.assertNotIn(self.drill.slug, [d["slug"] for d in api.get("/api/v1/drills/").json()["results"]])
        created = api.post("/api/v1/submissions/", {"drill": self.drill.slug, "code": "x"}, format="json")
        self.assertEqual(created.status_code, 404)
        api.force_authenticate(self.member)
        self.assertEqual(api.get(f"/api/v1/drills/{self.drill.slug}/").status_code, 200)

    def test_it_never_retires_a_team_drill_when_the_bundled_drills_are_imported(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            import_drills(Path(folder))
        self.drill.refresh_from_db()
        self.assertTrue(self.drill.active)
