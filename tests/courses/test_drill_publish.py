"""Publishing a course's drill (``graders.authoring.drafts.publish``): only a text whose last check passed, into
the course's own note, as a new version in place: the drill, its card and everything on them stay (a member's
schedule of the card, their submissions and reviews), and every published text is kept as a revision."""

from __future__ import annotations

from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from cards.models import Card, CardState, Course, ReviewLog
from graders.attempts import submissions
from graders.authoring import drafts
from graders.kinds.checks import CHECKS
from graders.kinds.verdicts import SUBMISSIONS
from graders.models import Drill, DrillCheck, DrillExamples, DrillRevision, Submission
from jobs import lifecycle
from tests.cards.factories import make_note
from tests.courses.test_drill_views import DOUBLE, RUNNER, CourseDrillTestCase

RIGHT = "def solution(x):\n    return 2 * x\n"
V2 = DOUBLE.replace('title = "Double it"', 'title = "Double it, again"')


class PublishTests(CourseDrillTestCase):
    def published(self, text: str = DOUBLE) -> DrillRevision:
        draft = self.draft(text)
        self.check(draft)
        return drafts.publish(draft, self.editor, timezone.now())

    def test_it_publishes_a_checked_drill_into_the_courses_note(self) -> None:
        revision = self.published()
        drill = Drill.objects.select_related("card__note").get()
        self.assertEqual(drill.slug, self.course.qualified("double"))
        self.assertEqual(
            (drill.card.note, drill.card.kind, drill.card.key), (self.note, "drill", f"drill:{drill.slug}")
        )
        self.assertEqual(drill.definition, DOUBLE)
        self.assertEqual(drill.source_path, "drills/basics/double.toml")
        self.assertEqual((revision.drill, revision.number, revision.version), (drill, 1, drill.version))
        self.assertEqual((revision.definition, revision.published_by), (DOUBLE, self.editor))

    def test_the_drill_page_has_the_checks_example_outputs_at_once(self) -> None:
        self.published()
        row = DrillExamples.objects.get()
        self.assertEqual(
            (row.status, row.outputs),
            ("done", [{"name": "small", "output": "tensor([2., 4.])\n# shape (2,), float32"}]),
        )

    def test_a_member_solves_it_and_an_outsider_never_finds_it(self) -> None:
        self.published()
        drill = Drill.objects.get()
        page = reverse("graders:drill", args=[drill.slug])
        self.assertContains(self.client_for(self.member).get(page), "Double it")
        outsider = self.client_for(self.outsider)
        self.assertEqual(outsider.get(page).status_code, 404)
        by_card = outsider.get(reverse("graders:for_card", args=[drill.card.uuid]), follow=True)
        self.assertEqual(by_card.status_code, 404)
        self.assertNotContains(outsider.get(reverse("graders:hub")), "Double it")
        self.assertEqual(outsider.get(f"/api/v1/drills/{drill.slug}/").status_code, 404)
        self.assertNotIn(drill.slug, outsider.get("/api/v1/drills/").content.decode())
        sent = outsider.post(
            "/api/v1/submissions/", {"drill": drill.slug, "code": RIGHT}, content_type="application/json"
        )
        self.assertEqual(sent.status_code, 404)

    def test_a_new_version_keeps_the_drill_its_card_and_a_members_schedule(self) -> None:
        self.published()
        drill = Drill.objects.get()
        sub = submissions.submit(self.member, drill, RIGHT)
        assert isinstance(sub, Submission)
        lifecycle.process(SUBMISSIONS, sub.pk, RUNNER, worker="test")
        sub.refresh_from_db()
        self.assertEqual(sub.status, "accepted")
        state = CardState.objects.get(user=self.member, card=drill.card)
        before = (state.due, state.interval, state.repetitions, state.easiness)
        revision = self.published(V2)
        drill.refresh_from_db()
        state.refresh_from_db()
        self.assertEqual((Drill.objects.get().pk, Card.objects.get(kind="drill").pk), (drill.pk, drill.card_id))
        self.assertEqual(drill.title, "Double it, again")
        self.assertEqual((state.due, state.interval, state.repetitions, state.easiness), before)
        self.assertEqual(ReviewLog.objects.filter(user=self.member, card=drill.card).count(), 1)
        self.assertEqual(list(drill.submissions.all()), [sub])
        self.assertEqual(revision.number, 2)
        # The first submission names the text it was graded against, which a revision still shows.
        shown = DrillRevision.objects.get(drill=drill, version=sub.drill_version)
        self.assertEqual((shown.number, shown.definition), (1, DOUBLE))

    def test_it_publishes_only_the_text_of_the_last_passing_check(self) -> None:
        draft = self.draft()
        with self.assertRaisesMessage(drafts.Refused, "Check this text first"):
            drafts.publish(draft, self.editor, timezone.now())
        self.check(draft)
        drafts.save_text(draft, self.editor, V2)  # changed after its check
        with self.assertRaisesMessage(drafts.Refused, "Check this text first"):
            drafts.publish(draft, self.editor, timezone.now())
        failing = V2.replace('expect = "wrong_answer"', 'expect = "time_limit"')
        drafts.save_text(draft, self.editor, failing)
        self.check(draft)
        with self.assertRaisesMessage(drafts.Refused, "The last check of this text failed"):
            drafts.publish(draft, self.editor, timezone.now())
        drafts.save_text(draft, self.editor, DOUBLE)  # back to the text that once passed: its check is not the last
        with self.assertRaisesMessage(drafts.Refused, "Check this text first"):
            drafts.publish(draft, self.editor, timezone.now())
        self.assertEqual((Drill.objects.count(), DrillRevision.objects.count()), (0, 0))

    def test_a_check_that_finishes_late_never_replaces_a_later_one(self) -> None:
        draft = self.draft()
        first = drafts.request_check(draft, self.editor, timezone.now())
        drafts.save_text(draft, self.editor, V2)
        second = drafts.request_check(draft, self.editor, timezone.now())
        lifecycle.process(CHECKS, second.pk, RUNNER, worker="test")
        lifecycle.process(CHECKS, first.pk, RUNNER, worker="test")
        draft.refresh_from_db()
        self.assertEqual((draft.last_check_id, draft.checked_text), (second.pk, V2))
        self.assertTrue(draft.passed)

    def test_it_refuses_a_note_that_is_not_the_courses_own(self) -> None:
        other = Course.objects.create(slug="other", title="Other")
        make_note(slug=other.qualified("elsewhere"), course=other, path="elsewhere.md")
        make_note(slug="bundled", path="bundled.md")
        for note in ("elsewhere.md", "other--elsewhere.md", "bundled.md", "missing.md"):
            draft = self.draft(DOUBLE.replace('note = "basics.md"', f'note = "{note}"'))
            self.check(draft)
            with self.assertRaisesMessage(drafts.Refused, "The course has no note"):
                drafts.publish(draft, self.editor, timezone.now())
        self.assertEqual(Drill.objects.count(), 0)

    def test_it_refuses_to_publish_the_same_text_twice(self) -> None:
        self.published()
        with self.assertRaisesMessage(drafts.Refused, "already the published version"):
            self.published()
        self.assertEqual(DrillRevision.objects.count(), 1)

    def test_the_editor_reopens_a_published_drill_as_a_draft(self) -> None:
        self.published()
        drill = Drill.objects.get()
        response = self.client_for(self.owner).post(self.url("drill_open", slug=drill.slug))
        draft = drafts.draft_for_drill(self.course, drill, self.owner)
        self.assertRedirects(response, self.url("drill_edit", draft=draft.uuid))
        self.assertEqual(draft.text, DOUBLE)

    def test_the_publish_button_publishes_and_says_which_version(self) -> None:
        draft = self.draft()
        self.check(draft)
        response = self.client_for(self.editor).post(self.url("drill_publish", draft=draft.uuid), follow=True)
        self.assertContains(response, "Published version 1.")
        self.assertContains(response, "data-learner-page")
        self.assertEqual(DrillCheck.objects.get().status, "done")

    def test_import_drills_leaves_a_teams_drills_alone(self) -> None:
        self.published()
        call_command("import_notes", "notes", verbosity=0)
        call_command("import_drills", verbosity=0)
        drill = Drill.objects.get(slug=self.course.qualified("double"))
        self.assertTrue(drill.active and drill.card.active)
