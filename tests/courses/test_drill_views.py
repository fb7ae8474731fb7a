"""The course drill pages (courses/drill_views.py): who may open them, the editor's form and TOML views, asking
for a check and reading its report. Checks run through the real job lifecycle with the trusted in-process
runner (the drills here are ours); tests/browser/test_drill_authoring.py runs them on a real worker."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.test import Client, TestCase
from django.urls import reverse

from cards.models import Course
from courses.drill_forms import post_data
from courses.drill_views import team_course
from graders.authoring import drafts
from graders.authoring.document import read_document, write_drill
from graders.drills.local import LocalRunner
from graders.kinds.checks import CHECKS
from graders.models import DrillCheck, DrillDraft
from jobs import lifecycle
from teams import services
from teams.models import Membership
from tests.cards.factories import make_note, make_user

DOUBLE = """\
slug = "double"
title = "Double it"
entry_point = "solution"
device = "cpu"
difficulty = "easy"
prompt_zh = "写 `solution(x)`：返回 `2 * x`。"
prompt_en = "Write `solution(x)`: return `2 * x`."
starter = "def solution(x):\\n    ...\\n"
reference = "def solution(x):\\n    return x * 2\\n"

[source]
note = "basics.md"
heading = "Tensors"

[[examples]]
name = "small"
args = ["torch.tensor([1.0, 2.0])"]

[[hidden]]
name = "random"
repeat = 2
args = ["torch.randn(4, generator=g)"]

[[wrong]]
why = "adds instead of multiplying"
expect = "wrong_answer"
code = "def solution(x):\\n    return x + 2\\n"

[[alternative]]
why = "add it to itself"
code = "def solution(x):\\n    return x + x\\n"
"""
NOTE = "# Basics\n\n## Tensors\n\nA tensor doubles with `2 * x`.\n"
RUNNER = LocalRunner()


class CourseDrillTestCase(TestCase):
    """A team with its course and one note; four personas: the owner, an editor, a member and an outsider."""

    def setUp(self) -> None:
        self.owner = make_user("olivia")
        self.editor = make_user("edna")
        self.member = make_user("max")
        self.outsider = make_user("oscar")
        self.team = services.create_team(self.owner, "Tensor Tamers", "UTC")
        for user in (self.editor, self.member):
            services.join(self.team, user)
        Membership.objects.filter(team=self.team, user=self.editor).update(role=Membership.Role.EDITOR)
        self.course = team_course(self.team)
        self.note = make_note(slug=self.course.qualified("basics"), course=self.course, content=NOTE, path="basics.md")

    def client_for(self, user: AbstractBaseUser) -> Client:
        client = Client()
        client.force_login(user)
        return client

    def url(self, name: str, **kwargs: Any) -> str:
        return reverse(f"courses:{name}", kwargs={"team": self.team.slug, **kwargs})

    def draft(self, text: str = DOUBLE) -> DrillDraft:
        return drafts.new_draft(self.course, self.editor, text)

    def check(self, draft: DrillDraft) -> DrillCheck:
        """Ask for a check and run it as a worker would: the real lifecycle, the trusted in-process runner."""
        asked = drafts.request_check(draft, self.editor, _now())
        lifecycle.process(CHECKS, asked.pk, RUNNER, worker="test")
        draft.refresh_from_db()
        asked.refresh_from_db()
        return asked


def _now() -> Any:
    from django.utils import timezone

    return timezone.now()


# Every drill page of a course and how the access tests below reach it (GET pages, then POST-only ones).
DRILL_GETS = ("drills", "drill_new", "drill_new_toml", "drill_edit", "drill_toml", "drill_check_status")
DRILL_POSTS = (
    "drill_edit",
    "drill_toml",
    "drill_check",
    "drill_publish",
    "drill_delete",
    "drill_new",
    "drill_new_toml",
)
DRILL_OTHERS = ("drill_open",)  # by a published drill's slug: tests/courses/test_drill_publish.py


def test_every_drill_url_of_a_course_is_in_the_access_tests() -> None:
    from courses import urls

    drill_urls = {p.name for p in urls.urlpatterns if "drills/" in str(p.pattern)}
    assert drill_urls == set(DRILL_GETS) | set(DRILL_POSTS) | set(DRILL_OTHERS)


class AccessTests(CourseDrillTestCase):
    def test_it_opens_every_page_to_the_owner_and_editors_only(self) -> None:
        draft = self.draft()
        pages = [self.url(name) for name in DRILL_GETS[:3]]
        pages += [self.url(name, draft=draft.uuid) for name in DRILL_GETS[3:]]
        for user, status in ((self.owner, 200), (self.editor, 200), (self.member, 403), (self.outsider, 404)):
            client = self.client_for(user)
            self.assertEqual([client.get(page).status_code for page in pages], [status] * len(pages), user)

    def test_it_refuses_every_post_to_members_and_outsiders_and_writes_nothing(self) -> None:
        draft = self.draft()
        posts = [self.url(name, draft=draft.uuid) for name in DRILL_POSTS[:5]]
        posts += [self.url(name) for name in DRILL_POSTS[5:]]
        for user, status in ((self.member, 403), (self.outsider, 404)):
            client = self.client_for(user)
            self.assertEqual([client.post(p, {"text": "x"}).status_code for p in posts], [status] * len(posts))
        self.assertEqual((DrillDraft.objects.count(), DrillCheck.objects.count()), (1, 0))
        draft.refresh_from_db()
        self.assertEqual(draft.text, DOUBLE)

    def test_it_hides_a_draft_of_another_course_from_an_editor_of_this_one(self) -> None:
        other = services.create_team(self.outsider, "Gradient Gang", "UTC")
        theirs = drafts.new_draft(team_course(other), self.outsider, DOUBLE)
        client = self.client_for(self.editor)
        for name in ("drill_edit", "drill_toml", "drill_check_status"):
            self.assertEqual(client.get(self.url(name, draft=theirs.uuid)).status_code, 404)
        self.assertEqual(client.post(self.url("drill_publish", draft=theirs.uuid)).status_code, 404)
        self.assertEqual(client.post(self.url("drill_check", draft=theirs.uuid)).status_code, 404)
        self.assertEqual(client.post(self.url("drill_delete", draft=theirs.uuid)).status_code, 404)
        self.assertTrue(DrillDraft.objects.filter(pk=theirs.pk).exists())

    def test_a_get_never_makes_the_course(self) -> None:
        team = services.create_team(self.owner, "New team", "UTC")
        client = self.client_for(self.owner)
        for name in ("drills", "drill_new", "drill_new_toml"):
            self.assertEqual(client.get(reverse(f"courses:{name}", args=[team.slug])).status_code, 200)
        team.refresh_from_db()
        self.assertIsNone(team.course)


class EditorTests(CourseDrillTestCase):
    def test_it_saves_a_new_drill_from_the_form_as_the_forms_toml(self) -> None:
        document = read_document(DOUBLE)
        response = self.client_for(self.editor).post(self.url("drill_new"), post_data(document))
        draft = DrillDraft.objects.get()
        self.assertRedirects(response, self.url("drill_edit", draft=draft.uuid))
        self.assertEqual(draft.text, write_drill(document))
        self.assertEqual((draft.course, draft.author, draft.slug), (self.course, self.editor, "double"))

    def test_the_first_drill_makes_the_teams_course(self) -> None:
        team = services.create_team(self.owner, "New team", "UTC")
        self.client_for(self.owner).post(reverse("courses:drill_new_toml", args=[team.slug]), {"text": DOUBLE})
        team.refresh_from_db()
        self.assertIsNotNone(team.course)
        self.assertFalse(team.course.public)
        self.assertEqual(DrillDraft.objects.get(course=team.course).text, DOUBLE)

    def test_it_keeps_a_pasted_drill_file_as_typed(self) -> None:
        text = "# a comment the form would drop\r\n" + DOUBLE
        self.client_for(self.editor).post(self.url("drill_new_toml"), {"text": text})
        self.assertEqual(DrillDraft.objects.get().text, text.replace("\r\n", "\n"))

    def test_it_shows_the_draft_in_the_form_and_saves_it_back(self) -> None:
        draft = self.draft(write_drill(read_document(DOUBLE)))
        client = self.client_for(self.editor)
        page = client.get(self.url("drill_edit", draft=draft.uuid)).content.decode()
        self.assertIn('value="double"', page)
        self.assertIn("adds instead of multiplying", page)
        self.assertNotIn("data-layout-note", page)  # the text is in the form's layout already
        changed = read_document(draft.text) | {"title": "Double it twice"}
        response = client.post(self.url("drill_edit", draft=draft.uuid), post_data(changed))
        self.assertRedirects(response, self.url("drill_edit", draft=draft.uuid))
        draft.refresh_from_db()
        self.assertEqual(draft.text, write_drill(changed))

    def test_it_says_what_the_form_cannot_hold_and_sends_the_author_to_the_toml(self) -> None:
        draft = self.draft(DOUBLE + "\nauthor = 'me'\n")
        page = self.client_for(self.editor).get(self.url("drill_edit", draft=draft.uuid)).content.decode()
        self.assertIn("data-unfit", page)
        self.assertIn("author: not a field of a drill file", page)
        self.assertNotIn("data-drill-author-form", page)

    def test_it_shows_the_contract_sentence_and_the_learners_view(self) -> None:
        draft = self.draft()
        page = self.client_for(self.editor).get(self.url("drill_edit", draft=draft.uuid)).content.decode()
        self.assertIn("returns a new result that shares no memory with the arguments", page)
        self.assertIn("返回不与参数共享内存的新结果", page)
        self.assertIn("solution(torch.tensor([1.0, 2.0]))", page)
        self.assertIn("Write <code>solution(x)</code>", page)

    def test_it_deletes_a_draft_and_its_checks(self) -> None:
        draft = self.draft()
        drafts.request_check(draft, self.editor, _now())
        response = self.client_for(self.editor).post(self.url("drill_delete", draft=draft.uuid))
        self.assertRedirects(response, self.url("drills"))
        self.assertEqual((DrillDraft.objects.count(), DrillCheck.objects.count()), (0, 0))

    def test_it_names_the_error_of_a_drill_file_it_saved(self) -> None:
        draft = self.draft(DOUBLE.replace('entry_point = "solution"', 'entry_point = "main"'))
        page = self.client_for(self.editor).get(self.url("drill_toml", draft=draft.uuid)).content.decode()
        self.assertIn("data-drill-error", page)
        self.assertIn("must define the entry point", page)


class CheckTests(CourseDrillTestCase):
    def test_save_and_check_queues_one_check_of_exactly_the_saved_text(self) -> None:
        draft = self.draft()
        client = self.client_for(self.editor)
        with self.captureOnCommitCallbacks() as sent:
            response = client.post(self.url("drill_toml", draft=draft.uuid), {"text": DOUBLE, "check": "1"})
        self.assertRedirects(
            response, self.url("drill_edit", draft=draft.uuid) + "#check", fetch_redirect_response=False
        )
        check = DrillCheck.objects.get()
        self.assertEqual(
            (check.text, check.status, check.course, check.requested_by), (DOUBLE, "queued", self.course, self.editor)
        )
        self.assertEqual(len(sent), 1)  # sent to a worker once the row is committed
        client.post(self.url("drill_check", draft=draft.uuid))
        self.assertEqual(DrillCheck.objects.count(), 1)  # the same text waiting: no second check

    def test_the_reaper_sends_a_lost_check_again(self) -> None:
        from datetime import timedelta

        asked = drafts.request_check(self.draft(), self.editor, _now() - timedelta(minutes=5))
        self.assertEqual(lifecycle.lost(CHECKS, _now()), [asked])
        self.assertEqual(CHECKS.queue(asked), "grade_cpu")

    def test_it_refuses_to_check_a_drill_file_with_an_error(self) -> None:
        draft = self.draft(DOUBLE.replace('"torch.randn(4, generator=g)"', "\"open('/etc/passwd')\""))
        response = self.client_for(self.editor).post(self.url("drill_check", draft=draft.uuid), follow=True)
        self.assertContains(response, "uses the unknown name &#x27;open&#x27;")
        self.assertEqual(DrillCheck.objects.count(), 0)

    def test_the_report_shows_each_item_and_opens_publishing(self) -> None:
        draft = self.draft()
        client = self.client_for(self.editor)
        asked = drafts.request_check(draft, self.editor, _now())
        pending = client.get(self.url("drill_check_status", draft=draft.uuid)).content.decode()
        self.assertIn('data-check-status="queued"', pending)
        self.assertIn("hx-get", pending)  # polls until the check is final
        lifecycle.process(CHECKS, asked.pk, RUNNER, worker="test")
        done = client.get(self.url("drill_check_status", draft=draft.uuid)).content.decode()
        self.assertNotIn("hx-get", done)
        self.assertIn('data-check-result="passed"', done)
        self.assertEqual(done.count('data-passed="true"'), 6)  # statement, 2 seeds, varies, wrong, alternative
        self.assertIn("data-publish>", done)
        page = client.get(self.url("drill_edit", draft=draft.uuid)).content.decode()
        self.assertIn("tensor([2., 4.])", page)  # the reference's output in the learner's view of the examples

    def test_a_failed_check_keeps_publishing_closed_and_says_why(self) -> None:
        draft = self.draft(DOUBLE.replace('expect = "wrong_answer"', 'expect = "runtime_error"'))
        self.check(draft)
        done = self.client_for(self.editor).get(self.url("drill_check_status", draft=draft.uuid)).content.decode()
        self.assertIn('data-check-result="failed"', done)
        self.assertIn("Expected runtime_error, got wrong_answer", done)
        self.assertNotIn("data-publish>", done)
        self.assertIn("The last check of this text failed", done)


class CourseTests(CourseDrillTestCase):
    def test_a_team_named_like_the_bundled_course_never_gets_it(self) -> None:
        team = services.create_team(self.owner, "pytorch", "UTC")
        team.slug = "pytorch"  # even a slug equal to the bundled course's
        course = team_course(team)
        self.assertNotEqual(course.slug, "pytorch")
        self.assertFalse(course.is_bundled)
        self.assertFalse(Course.objects.get(pk=course.pk).public)
