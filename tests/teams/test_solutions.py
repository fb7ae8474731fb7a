"""Solutions and comments after solving (issue 41 item 3): closed before solving, grouped by normalised code, kept
within teams unless a drill opens them site-wide, and a teacher's comment reaching every learner of the group."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from unittest import mock

from django.apps import apps
from django.contrib.auth.models import AbstractBaseUser
from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from cards.models import Card, Course, bundled_course
from graders.drills.schema import parse_drill
from graders.drills.solution_key import solution_key
from graders.management.commands.import_drills import card_fields, card_key, drill_fields
from graders.models import Drill, DrillReview, Submission
from teams import services, solutions
from teams.models import Membership, SolutionComment, Team
from tests.api.base import DRILL_TOML
from tests.cards.factories import make_note, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)
PLUS = "def solution(x):\n    return x + 1\n"
PLUS_RENAMED = "def solution(t):\n    # one more\n    return t+1\n"
ADD = "import torch\n\ndef solution(x):\n    return torch.add(x, 1)\n"
OTHER_TEAM_CODE = "def solution(x):\n    return x.add(1)  # other team's secret\n"


def make_drill(note_course: Course, slug: str = "add-one") -> Drill:
    note = make_note(slug=note_course.qualified(f"note-{slug}"), course=note_course)
    spec = parse_drill(DRILL_TOML.replace('slug = "add-one"', f'slug = "{slug}"'), f"drills/{slug}.toml")
    stored = note_course.qualified(spec.slug)
    card = Card.objects.create(key=card_key(stored), **card_fields(spec, note, 10_001))
    return Drill.objects.create(slug=stored, card=card, **drill_fields(spec, DRILL_TOML, spec.path))


def accept(user: AbstractBaseUser, drill: Drill, code: str) -> Submission:
    """An accepted attempt as the worker stores it (with its solution key)."""
    return Submission.objects.create(
        user=user,
        drill=drill,
        code=code,
        kind="submit",
        seed=1,
        drill_version=drill.version,
        status="accepted",
        verdict={"status": "accepted"},
        solution_key=solution_key(code),
        queued_at=NOW,
        finished_at=NOW,
    )


class SolutionsTestCase(TestCase):
    """Team A: an owner (the teacher), an editor and two learners; team B: its owner and a learner; a loner."""

    def setUp(self) -> None:
        self.teacher = make_user("olivia", time_zone="UTC")
        self.editor = make_user("eddie", time_zone="UTC")
        self.max = make_user("max", time_zone="UTC")
        self.mia = make_user("mia", time_zone="UTC")
        self.other_teacher = make_user("oscar", time_zone="UTC")
        self.bob = make_user("bob", time_zone="UTC")
        self.team = services.create_team(self.teacher, "Tensor Tamers", "UTC")
        for user in (self.editor, self.max, self.mia):
            services.join(self.team, user)
        Membership.objects.filter(team=self.team, user=self.editor).update(role=Membership.Role.EDITOR)
        self.other = services.create_team(self.other_teacher, "Grad Gang", "UTC")
        services.join(self.other, self.bob)
        self.drill = make_drill(bundled_course())
        self.client.force_login(self.max)

    def page(self, drill: Drill | None = None) -> str:
        response = self.client.get(reverse("teams:drill_solutions", args=[(drill or self.drill).slug]))
        self.assertEqual(response.status_code, 200)
        return response.content.decode()

    def comment(self, key: str, team: Team, text: str) -> int:
        url = reverse("teams:solution_comment", args=[self.drill.slug])
        return self.client.post(url, {"key": key, "team": team.slug, "text": text}).status_code


class ClosedTests(SolutionsTestCase):
    def test_it_keeps_the_solutions_closed_before_solving(self) -> None:
        accept(self.mia, self.drill, PLUS)
        page = self.page()
        self.assertIn("data-solutions-closed", page)
        self.assertNotIn("return x + 1", page)
        api = APIClient()
        api.force_authenticate(self.max)
        self.assertEqual(api.get(f"/api/v1/drills/{self.drill.slug}/solutions/").status_code, 403)
        drill_page = self.client.get(reverse("graders:drill", args=[self.drill.slug])).content.decode()
        self.assertNotIn("data-solutions-link", drill_page)

    def test_it_opens_them_after_a_give_up_or_a_look_at_the_reference(self) -> None:
        review = DrillReview.objects.create(user=self.max, drill=self.drill, seed=1)
        self.assertIn("data-solutions-closed", self.page())
        DrillReview.objects.filter(pk=review.pk).update(reference_viewed_at=NOW)
        self.assertNotIn("data-solutions-closed", self.page())
        DrillReview.objects.filter(pk=review.pk).update(reference_viewed_at=None, finished_at=NOW, outcome="gave_up")
        self.assertNotIn("data-solutions-closed", self.page())
        DrillReview.objects.filter(pk=review.pk).update(outcome="moved_on")
        self.assertIn("data-solutions-closed", self.page())

    def test_it_opens_them_after_an_accept_and_links_them_from_the_drill_page(self) -> None:
        accept(self.max, self.drill, PLUS)
        drill_page = self.client.get(reverse("graders:drill", args=[self.drill.slug])).content.decode()
        self.assertIn(reverse("teams:drill_solutions", args=[self.drill.slug]), drill_page)


class GroupTests(SolutionsTestCase):
    def test_it_groups_by_normalised_code_largest_first_with_the_reference_marked(self) -> None:
        accept(self.max, self.drill, PLUS)
        accept(self.mia, self.drill, PLUS_RENAMED)
        accept(self.editor, self.drill, ADD)
        api = APIClient()
        api.force_authenticate(self.max)
        groups = api.get(f"/api/v1/drills/{self.drill.slug}/solutions/").json()["groups"]
        self.assertEqual(
            [(g["learners"], g["mine"], g["reference"]) for g in groups], [(2, True, True), (1, False, False)]
        )
        self.assertEqual(groups[0]["code"], PLUS)  # the viewer's own spelling of their group
        page = self.page()
        self.assertIn("data-reference-badge", page)
        self.assertLess(page.index("x + 1"), page.index("torch.add"))

    def test_it_always_shows_the_viewers_own_group_even_past_the_largest(self) -> None:
        accept(self.max, self.drill, ADD)
        accept(self.mia, self.drill, PLUS)
        accept(self.editor, self.drill, PLUS_RENAMED)
        with mock.patch("teams.solutions.MAX_GROUPS", 1):
            page = solutions.solutions_page(self.max, self.drill)
        self.assertEqual([(g.learners, g.mine, g.reference) for g in page.groups], [(2, False, True), (1, True, False)])

    def test_it_adds_the_reference_as_its_own_group_when_nobody_wrote_it(self) -> None:
        accept(self.max, self.drill, ADD)
        groups = APIClient()
        groups.force_authenticate(self.max)
        data = groups.get(f"/api/v1/drills/{self.drill.slug}/solutions/").json()["groups"]
        self.assertEqual([(g["learners"], g["reference"]) for g in data], [(1, False), (0, True)])

    def test_it_never_shows_another_teams_solutions_unless_the_drill_opens_them(self) -> None:
        accept(self.max, self.drill, PLUS)
        accept(self.bob, self.drill, OTHER_TEAM_CODE)
        self.assertNotIn("secret", self.page())
        self.client.force_login(self.bob)
        self.assertNotIn("return x + 1", self.page().replace("return x + 1  # the reference", ""))
        Drill.objects.filter(pk=self.drill.pk).update(solutions_public=True)
        self.client.force_login(self.max)
        self.assertIn("secret", self.page())


class CommentTests(SolutionsTestCase):
    def setUp(self) -> None:
        super().setUp()
        for teacher in (self.teacher, self.editor, self.other_teacher):  # teachers open the solutions as anyone does
            DrillReview.objects.create(user=teacher, drill=self.drill, seed=1, reference_viewed_at=NOW)

    def test_a_teacher_who_has_not_solved_a_bundled_drill_neither_reads_nor_comments(self) -> None:
        """Anyone can make a team and own it: teaching opens only the drills of the team's own course."""
        accept(self.max, self.drill, ADD)
        DrillReview.objects.filter(user=self.teacher).delete()
        self.client.force_login(self.teacher)
        self.assertIn("data-solutions-closed", self.page())
        self.assertEqual(self.comment(solution_key(ADD), self.team, "Unseen."), 404)
        self.assertFalse(SolutionComment.objects.exists())

    def test_a_teachers_comment_reaches_every_learner_of_the_group_now_and_later(self) -> None:
        accept(self.max, self.drill, PLUS)
        self.client.force_login(self.teacher)
        self.assertEqual(self.comment(solution_key(PLUS), self.team, "Neat: <b>broadcasting</b> does the work."), 302)
        self.client.force_login(self.max)
        self.assertIn("Neat: &lt;b&gt;broadcasting&lt;/b&gt; does the work.", self.page())  # text, never markup
        drill_page = self.client.get(reverse("graders:drill", args=[self.drill.slug])).content.decode()
        self.assertIn("data-solutions-comments", drill_page)
        accept(self.mia, self.drill, PLUS_RENAMED)  # later, spelled differently, the same group
        self.client.force_login(self.mia)
        page = self.page()
        self.assertIn("Neat: &lt;b&gt;broadcasting", page)
        self.assertIn("data-mine", page.split("Neat:")[0].rsplit("<section", 1)[1])

    def test_an_editor_comments_and_a_member_cannot(self) -> None:
        accept(self.max, self.drill, PLUS)
        self.client.force_login(self.editor)
        self.assertEqual(self.comment(solution_key(PLUS), self.team, "From the editor."), 302)
        self.client.force_login(self.mia)
        self.assertEqual(self.comment(solution_key(PLUS), self.team, "From a member."), 404)
        self.assertEqual(list(SolutionComment.objects.values_list("text", flat=True)), ["From the editor."])

    def own_comment(self) -> SolutionComment:
        accept(self.max, self.drill, PLUS)
        return SolutionComment.objects.create(
            drill=self.drill, solution_key=solution_key(PLUS), team=self.team, author=self.editor, text="First words."
        )

    def change(self, comment: SolutionComment, text: str) -> int:
        url = reverse("teams:edit_solution_comment", args=[self.drill.slug, comment.uuid])
        return self.client.post(url, {"text": text}).status_code

    def delete(self, comment: SolutionComment) -> int:
        url = reverse("teams:delete_solution_comment", args=[self.drill.slug, comment.uuid])
        return self.client.post(url).status_code

    def test_its_author_edits_a_comment_and_the_learners_read_the_new_text(self) -> None:
        comment = self.own_comment()
        self.client.force_login(self.editor)
        self.assertIn("data-own-comment", self.page())
        self.assertEqual(self.change(comment, "  Better words.  "), 302)
        comment.refresh_from_db()
        self.assertEqual(comment.text, "Better words.")
        self.assertIsNotNone(comment.edited_at)
        self.client.force_login(self.max)
        page = self.page()
        self.assertIn("Better words.", page)
        self.assertNotIn("First words.", page)
        self.assertIn("data-comment-edited", page)
        self.assertNotIn("data-own-comment", page)  # a learner is offered no edit

    def test_its_author_deletes_a_comment(self) -> None:
        comment = self.own_comment()
        self.client.force_login(self.editor)
        self.assertEqual(self.delete(comment), 302)
        self.assertFalse(SolutionComment.objects.exists())
        self.client.force_login(self.max)
        self.assertNotIn("First words.", self.page())

    def test_a_member_or_another_teacher_may_neither_edit_nor_delete_a_comment(self) -> None:
        comment = self.own_comment()
        for user in (self.max, self.teacher, self.other_teacher):  # a member, the team's owner, another team's owner
            self.client.force_login(user)
            self.assertEqual((self.change(comment, "Hijacked."), self.delete(comment)), (404, 404))
        comment.refresh_from_db()
        self.assertEqual((comment.text, comment.edited_at), ("First words.", None))

    def test_an_author_no_longer_teaching_the_team_may_not_change_the_comment(self) -> None:
        comment = self.own_comment()
        Membership.objects.filter(team=self.team, user=self.editor).update(role=Membership.Role.MEMBER)
        self.client.force_login(self.editor)
        self.assertEqual((self.change(comment, "Still mine?"), self.delete(comment)), (404, 404))
        self.assertTrue(SolutionComment.objects.filter(text="First words.").exists())

    def test_editing_and_deleting_take_a_post_with_a_csrf_token_and_keep_the_text_rules(self) -> None:
        comment = self.own_comment()
        self.client.force_login(self.editor)
        url = reverse("teams:edit_solution_comment", args=[self.drill.slug, comment.uuid])
        self.assertEqual(self.client.get(url).status_code, 405)
        gone = reverse("teams:delete_solution_comment", args=[self.drill.slug, comment.uuid])
        self.assertEqual(self.client.get(gone).status_code, 405)
        strict = self.client_class(enforce_csrf_checks=True)
        strict.force_login(self.editor)
        self.assertEqual(strict.post(url, {"text": "No token."}).status_code, 403)
        self.assertEqual(strict.post(gone).status_code, 403)
        self.assertEqual(self.change(comment, "   "), 302)  # refused with a message
        comment.refresh_from_db()
        self.assertEqual(comment.text, "First words.")

    def test_its_author_edits_and_deletes_a_comment_through_the_api_and_a_member_may_not(self) -> None:
        comment = self.own_comment()
        url = f"/api/v1/drills/{self.drill.slug}/solutions/comments/{comment.uuid}/"
        api = APIClient()
        api.force_authenticate(self.max)
        self.assertEqual(api.patch(url, {"text": "Hijacked."}, format="json").status_code, 404)
        self.assertEqual(api.delete(url).status_code, 404)
        api.force_authenticate(self.editor)
        edited = api.patch(url, {"text": "Better words."}, format="json")
        self.assertEqual((edited.status_code, edited.json()["text"]), (200, "Better words."))
        api.force_authenticate(self.max)
        read = api.get(f"/api/v1/drills/{self.drill.slug}/solutions/").json()["groups"][0]["comments"][0]
        self.assertEqual((read["text"], read["uuid"]), ("Better words.", str(comment.uuid)))
        self.assertIsNotNone(read["edited_at"])
        api.force_authenticate(self.editor)
        self.assertEqual(api.delete(url).status_code, 204)
        self.assertFalse(SolutionComment.objects.exists())

    def test_it_refuses_a_comment_for_a_team_not_taught_or_a_group_it_has_not(self) -> None:
        accept(self.max, self.drill, ADD)
        accept(self.bob, self.drill, OTHER_TEAM_CODE)
        self.client.force_login(self.other_teacher)
        self.assertEqual(self.comment(solution_key(ADD), self.team, "Not my team."), 404)
        self.assertEqual(self.comment(solution_key(ADD), self.other, "Nobody of mine wrote it."), 404)
        self.assertEqual(self.comment("a:" + "0" * 64, self.other, "A guessed key."), 404)
        self.assertFalse(SolutionComment.objects.exists())
        self.assertEqual(self.comment(solution_key(OTHER_TEAM_CODE), self.other, "Grad Gang only."), 302)

    def test_it_shows_a_comment_to_its_own_team_alone(self) -> None:
        accept(self.max, self.drill, PLUS)
        accept(self.bob, self.drill, PLUS_RENAMED)
        SolutionComment.objects.create(
            drill=self.drill, solution_key=solution_key(PLUS), team=self.other, author=self.other_teacher, text="GG"
        )
        Drill.objects.filter(pk=self.drill.pk).update(solutions_public=True)
        self.assertNotIn("<p>GG</p>", self.page())
        self.client.force_login(self.bob)
        self.assertIn("<p>GG</p>", self.page())


class SiteWideTests(SolutionsTestCase):
    def setUp(self) -> None:
        super().setUp()
        course = Course.objects.create(slug="tamers", title="Tamers' course")
        Team.objects.filter(pk=self.team.pk).update(course=course)
        self.team_drill = make_drill(course, slug="team-add")

    def toggle(self, drill: Drill, public: str = "1") -> int:
        return self.client.post(reverse("teams:solutions_site_wide", args=[drill.slug]), {"public": public}).status_code

    def test_the_drills_team_owner_or_staff_alone_open_it_site_wide(self) -> None:
        self.assertEqual(self.toggle(self.team_drill), 404)  # max, a member
        self.client.force_login(self.editor)
        self.assertEqual(self.toggle(self.team_drill), 404)
        self.assertEqual(self.toggle(self.drill), 404)  # the bundled drill: staff alone
        self.client.force_login(self.teacher)
        self.assertEqual(self.toggle(self.drill), 404)
        self.assertEqual(self.toggle(self.team_drill), 302)
        self.team_drill.refresh_from_db()
        self.assertTrue(self.team_drill.solutions_public)
        staff = make_user("sam")
        type(staff).objects.filter(pk=staff.pk).update(is_staff=True)
        self.client.force_login(staff)
        self.assertEqual(self.toggle(self.drill), 302)
        self.drill.refresh_from_db()
        self.assertTrue(self.drill.solutions_public)

    def test_the_teachers_of_the_drills_course_see_its_solutions_without_solving(self) -> None:
        accept(self.max, self.team_drill, ADD)
        for teacher in (self.teacher, self.editor):
            self.client.force_login(teacher)
            self.assertIn("torch.add", self.page(self.team_drill))
        self.client.force_login(self.mia)
        self.assertIn("data-solutions-closed", self.page(self.team_drill))

    def test_another_teams_drill_is_a_404_on_every_path(self) -> None:
        accept(self.max, self.team_drill, PLUS)
        self.client.force_login(self.other_teacher)
        slug = self.team_drill.slug
        self.assertEqual(self.client.get(reverse("teams:drill_solutions", args=[slug])).status_code, 404)
        self.assertEqual(self.toggle(self.team_drill), 404)
        url = reverse("teams:solution_comment", args=[slug])
        data = {"key": solution_key(PLUS), "team": self.other.slug, "text": "x"}
        self.assertEqual(self.client.post(url, data).status_code, 404)
        api = APIClient()
        api.force_authenticate(self.other_teacher)
        self.assertEqual(api.get(f"/api/v1/drills/{slug}/solutions/").status_code, 404)
        comments = api.post(f"/api/v1/drills/{slug}/solutions/comments/", data, format="json")
        self.assertEqual(comments.status_code, 404)
        self.assertEqual(api.get("/api/v1/drills/no-such-drill/solutions/").status_code, 404)
        self.assertFalse(SolutionComment.objects.exists())


class ApiCommentTests(SolutionsTestCase):
    def test_a_teacher_comments_through_the_api_and_the_learner_reads_it(self) -> None:
        accept(self.max, self.drill, PLUS)
        accept(self.teacher, self.drill, ADD)  # the teacher solved it too (another way)
        api = APIClient()
        api.force_authenticate(self.teacher)
        data = {"key": solution_key(PLUS), "team": self.team.slug, "text": "Try it without broadcasting."}
        created = api.post(f"/api/v1/drills/{self.drill.slug}/solutions/comments/", data, format="json")
        self.assertEqual((created.status_code, created.json()["team"]), (201, "Tensor Tamers"))
        api.force_authenticate(self.max)
        groups = api.get(f"/api/v1/drills/{self.drill.slug}/solutions/").json()["groups"]
        self.assertEqual(groups[0]["comments"][0]["text"], "Try it without broadcasting.")


class BackfillTests(TestCase):
    def test_it_keys_the_accepted_attempts_recorded_before_keys(self) -> None:
        drill = make_drill(bundled_course())
        learner = make_user("early")
        old = accept(learner, drill, PLUS)
        wrong = accept(learner, drill, ADD)
        Submission.objects.filter(pk=old.pk).update(solution_key="")
        Submission.objects.filter(pk=wrong.pk).update(solution_key="", status="wrong_answer")
        migration = importlib.import_module("graders.migrations.0014_solution_keys")
        migration.backfill_solution_keys(apps, None)
        old.refresh_from_db()
        wrong.refresh_from_db()
        self.assertEqual((old.solution_key, wrong.solution_key), (solution_key(PLUS), ""))
