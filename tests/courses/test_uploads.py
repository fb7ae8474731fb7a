"""Notes uploaded into a team's course (courses.services): a preview writes nothing of the course, a
confirmation imports exactly what was previewed, every bad input is refused with a clear reason and writes
nothing, the caps hold, and a concurrent change is never overwritten."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime, timedelta

from django.db.models import Model
from django.test import override_settings
from django.utils import timezone

from cards import review
from cards.models import Card, Course, Note
from cards.review import RatingRequest
from courses import services
from courses.models import CourseFile, Upload
from outputs.models import SnippetRun
from tests.courses.base import AUTOGRAD, CURATED, SHAPES, CourseTestCase

WATCHED: list[type[Model]] = [Course, Note, Card, Upload, CourseFile, SnippetRun]


def zipped(members: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


class PreviewTests(CourseTestCase):
    def test_it_plans_the_notes_and_writes_nothing_of_the_course(self) -> None:
        upload = self.preview([("autograd.md", AUTOGRAD), ("shapes.md", SHAPES)])
        self.assertFalse(Course.objects.exclude(slug="pytorch").exists())
        self.assertFalse(Note.objects.exists())
        self.assertFalse(Card.objects.exists())
        self.assertIsNone(self.fresh_team().course_id)
        notes = {entry["slug"]: entry for entry in upload.report["notes"]}
        self.assertEqual(set(notes), {"autograd", "shapes"})
        autograd = notes["autograd"]
        self.assertEqual(autograd["kinds"], {"qa": 2, "cloze": 1, "mapping": 4, "output": 1})
        self.assertEqual(len(autograd["created"]), 8)
        self.assertTrue(autograd["note_created"])
        self.assertEqual({card["kind"] for card in autograd["previews"]}, {"qa", "cloze", "mapping", "output"})
        self.assertEqual(upload.report["totals"]["create"], 8 + notes["shapes"]["cards"])
        self.assertEqual(upload.state, Upload.State.PREVIEW)
        self.assertEqual([entry["name"] for entry in upload.files], ["autograd.md", "shapes.md"])

    def test_it_takes_a_zip_of_a_course_folder_with_its_cards_files_and_leaves_out_its_drills(self) -> None:
        data = zipped(
            {
                "tamers/shapes.md": SHAPES,
                "tamers/cards/shapes.toml": CURATED,
                "tamers/drills/shapes/add-one.toml": "slug = 'add-one'\n",
                "tamers/learning-order.toml": "",
            }
        )
        upload = self.preview([("tamers.zip", data)])
        (shapes,) = upload.report["notes"]
        self.assertIn("怎样查看张量 `x` 的形状?", shapes["created"])  # the curated card
        self.assertEqual(upload.files[0]["cards_name"], "tamers/cards/shapes.toml")
        self.assertEqual(len(upload.report["skipped"]), 2)
        self.assertIn("drill editor", upload.report["skipped"][0])

    def test_it_pairs_a_cards_file_picked_beside_its_note(self) -> None:
        upload = self.preview([("shapes.md", SHAPES), ("shapes.toml", CURATED)])
        self.assertIn("怎样查看张量 `x` 的形状?", upload.report["notes"][0]["created"])


class RefusalTests(CourseTestCase):
    """Each bad input: a CourseError naming the file (and line) and the reason, and nothing written."""

    def assert_refused(self, files: list[tuple[str, bytes | str]], *expected: str, **caps: int) -> None:
        before = [model.objects.count() for model in WATCHED]
        with self.assertRaises(services.CourseError) as caught:
            self.preview(files, **caps)
        text = "\n".join(caught.exception.problems)
        for phrase in expected:
            self.assertIn(phrase, text)
        self.assertEqual([model.objects.count() for model in WATCHED], before)

    def test_it_refuses_a_file_that_is_not_utf8_naming_its_line(self) -> None:
        self.assert_refused(
            [("latin.md", "# Café\n\n## à\n".encode("latin-1"))], "latin.md", "not valid UTF-8", "line 1"
        )

    def test_it_refuses_a_binary_file_naming_its_line(self) -> None:
        self.assert_refused([("image.md", b"# title\n\nok\n\x89PNG\0\0")], "image.md", "binary file", "line 4")

    def test_it_refuses_an_upload_over_the_byte_cap(self) -> None:
        self.assert_refused([("autograd.md", AUTOGRAD)], "over this site's limit of 100 bytes", upload_bytes=100)

    def test_it_refuses_a_zip_bomb(self) -> None:
        bomb = zipped({"bomb.md": "# bomb\n" + "\n" * (600 * 1024)})
        self.assert_refused([("bomb.zip", bomb)], "bomb.zip", "zip bomb")

    def test_it_refuses_a_zip_whose_names_climb_out(self) -> None:
        self.assert_refused([("c.zip", zipped({"../../etc/x.md": SHAPES}))], "c.zip", "'..' is refused")

    def test_it_refuses_a_note_that_gives_no_card(self) -> None:
        self.assert_refused(
            [("prose.md", "# 随笔\n\n只是一段没有术语的文字。\n")], "prose.md: gives no card", "cards/prose.toml"
        )

    def test_it_refuses_two_files_that_give_one_note_name(self) -> None:
        self.assert_refused([("Shapes.md", SHAPES), ("a/shapes.md", SHAPES)], "gives the same note name as Shapes.md")

    def test_it_refuses_a_curated_file_with_mistakes_naming_the_card_and_field(self) -> None:
        bad = CURATED.replace('kind = "qa"', 'kind = "essay"') + '\n[[card]]\nid = "x"\n'
        self.assert_refused(
            [("shapes.md", SHAPES), ("cards/shapes.toml", bad)],
            "cards/shapes.toml: card 1 (shape-attribute): kind must be one of qa, cloze",
            "cards/shapes.toml: card 2 (x): section is missing or empty",
        )

    def test_it_refuses_a_curated_file_that_is_not_toml_naming_its_line(self) -> None:
        self.assert_refused(
            [("shapes.md", SHAPES), ("shapes.toml", "[[card]]\nid = \n")], "shapes.toml: not valid TOML", "line 2"
        )

    def test_it_refuses_a_file_that_is_no_note_and_a_cards_file_of_no_note(self) -> None:
        self.assert_refused(
            [("a.png", b"png"), ("autograd.md", AUTOGRAD), ("other.toml", CURATED)],
            "a.png: is neither",
            "other.toml: a cards file for no note",
        )

    def test_it_refuses_a_name_that_cannot_be_an_address(self) -> None:
        self.assert_refused([("自动求导.md", AUTOGRAD)], "name the file with Latin letters")

    def test_it_refuses_an_empty_upload(self) -> None:
        self.assert_refused([], "holds no note")

    def test_it_refuses_a_note_name_another_course_holds(self) -> None:
        course = Course.objects.create(slug=services.course_slug_for(self.team) + "x", title="x")
        Note.objects.create(
            slug=services.course_of(self.fresh_team()).qualified("shapes"),
            course=course,
            path="s.md",
            title="s",
            content="",
            content_hash="0",
        )
        self.assert_refused([("shapes.md", SHAPES)], "belongs to another course")


class CapTests(CourseTestCase):
    def test_it_refuses_more_notes_than_a_course_may_have(self) -> None:
        self.import_notes([("autograd.md", AUTOGRAD)])
        with self.assertRaisesMessage(services.CourseError, "would have 2 notes, over this site's limit of 1"):
            self.preview([("shapes.md", SHAPES)], notes=1)
        self.preview([("autograd.md", AUTOGRAD.replace("3", "4"))], notes=1)  # a new version of its one note is fine

    def test_it_refuses_more_cards_than_a_course_may_have(self) -> None:
        self.import_notes([("autograd.md", AUTOGRAD)])
        with self.assertRaisesMessage(services.CourseError, "over this site's limit of 8 a course"):
            self.preview([("shapes.md", SHAPES)], cards=8)

    def test_it_refuses_uploads_past_the_hourly_cap(self) -> None:
        for _ in range(2):
            self.preview([("shapes.md", SHAPES)], uploads_per_hour=2)
        with self.assertRaisesMessage(services.CourseError, "uploaded 2 times in the last hour"):
            self.preview([("shapes.md", SHAPES)], uploads_per_hour=2)
        Upload.objects.update(created_at=timezone.now() - timedelta(hours=1, seconds=1))
        self.preview([("shapes.md", SHAPES)], uploads_per_hour=2)

    @override_settings(COURSE_MAX_NOTES=1)
    def test_it_holds_the_caps_again_when_confirming(self) -> None:
        first, second = (self.preview([(name, SHAPES)]) for name in ("a.md", "b.md"))
        services.confirm(first, self.editor)
        with self.assertRaisesMessage(services.CourseError, "would have 2 notes"):
            services.confirm(second, self.editor)
        self.assertEqual(Note.objects.count(), 1)


class ConfirmTests(CourseTestCase):
    def test_it_makes_the_course_and_imports_the_notes_into_it(self) -> None:
        done = self.import_notes([("autograd.md", AUTOGRAD), ("shapes.md", SHAPES)])
        team = self.fresh_team()
        self.assertEqual(team.course, done.course)
        self.assertEqual(done.course.slug, services.course_slug_for(team).removesuffix(f"-{team.uuid.hex[:8]}"))
        self.assertFalse(done.course.public)
        self.assertEqual(
            set(Note.objects.values_list("slug", flat=True)),
            {f"{done.course.slug}--autograd", f"{done.course.slug}--shapes"},
        )
        self.assertEqual(Card.objects.filter(note__course=done.course).count(), 8 + 1)
        self.assertEqual(Upload.objects.get().state, Upload.State.CONFIRMED)
        self.assertEqual(set(CourseFile.objects.values_list("path", flat=True)), {"autograd.md", "shapes.md"})

    def test_it_brings_the_cards_to_members_and_to_nobody_else(self) -> None:
        self.import_notes([("shapes.md", SHAPES)])
        card = Card.objects.get()
        now = datetime(2026, 3, 10, 10, tzinfo=UTC)
        for user in (self.owner, self.editor, self.member):
            item = review.next_card(user, review.get_profile(user), now)[0]
            self.assertIsNotNone(item)
            self.assertEqual(item.card, card)
        self.assertIsNone(review.next_card(self.outsider, review.get_profile(self.outsider), now)[0])
        self.assertFalse(Card.objects.visible_to(self.outsider).exists())

    def test_it_hands_the_output_cards_to_the_sandbox_verifier_after_the_commit(self) -> None:
        upload = self.preview([("autograd.md", AUTOGRAD)])
        with self.captureOnCommitCallbacks(execute=False) as sent:
            done = services.confirm(upload, self.editor)
        output = Card.objects.get(kind=Card.Kind.OUTPUT)
        self.assertFalse(output.active)  # out of review until the worker ran it
        run = SnippetRun.objects.get(card=output)
        self.assertEqual(run.status, "queued")  # a worker job: nothing ran in this (the web) process
        self.assertEqual(len(sent), 1)  # sent to the workers once the import committed
        self.assertIn("1 waiting for a sandbox run", done.verified[0])

    def test_it_keeps_history_on_a_new_version_as_import_notes_does(self) -> None:
        self.import_notes([("autograd.md", AUTOGRAD)])
        qa = Card.objects.get(front__contains="requires_grad")
        retired = Card.objects.get(front__contains="`grad_fn`")
        cat = Card.objects.get(front__contains="`torch.cat` 对应")
        now = datetime(2026, 3, 10, 10, tzinfo=UTC)
        profile = review.get_profile(self.member)
        review.rate(
            self.member, profile, RatingRequest(qa.uuid, 4, review.next_card(self.member, profile, now)[0].version), now
        )
        edited = AUTOGRAD.replace("- `grad_fn`：创建该张量的函数\n", "").replace("张量是否需要梯度", "张量是否要求梯度")
        edited = edited.replace("## 常用函数", "## 常用的函数")  # a heading renamed
        upload = self.preview([("autograd.md", edited)])
        (entry,) = upload.report["notes"]
        self.assertEqual(len(entry["updated"]), 1)
        self.assertEqual(len(entry["retired"]), 1)
        services.confirm(upload, self.editor)
        qa.refresh_from_db()
        retired.refresh_from_db()
        self.assertEqual(qa.back, "张量是否要求梯度")  # the same row: the member's state and log stay on it
        self.assertTrue(qa.states.filter(user=self.member).exists())
        self.assertFalse(retired.active)  # retired, never deleted
        self.assertTrue(Card.objects.filter(pk=cat.pk, active=True, heading_path__contains="常用的函数").exists())

    def test_it_refuses_a_confirmation_when_the_course_changed_since_the_preview(self) -> None:
        self.import_notes([("shapes.md", SHAPES)])
        ours = self.preview([("shapes.md", SHAPES.replace("它是一个", "它的长度是维数,它是一个"))])
        theirs = self.preview([("shapes.md", SHAPES.replace("> [!NOTE]", "> [!TIP]"))])
        services.confirm(theirs, self.owner)
        imported = Note.objects.get().content
        with self.assertRaises(services.CourseChanged):
            services.confirm(ours, self.editor)
        self.assertEqual(Note.objects.get().content, imported)  # their change stands
        ours.refresh_from_db()
        self.assertEqual(ours.state, Upload.State.PREVIEW)
        self.assertTrue(ours.report["notes"][0]["text_edits"])  # the new report: against their version
        services.confirm(ours, self.editor)  # read again, confirmed again: imported
        self.assertIn("它的长度是维数", Note.objects.get().content)

    def test_it_refuses_an_expired_a_confirmed_and_a_discarded_upload(self) -> None:
        expired = self.preview([("shapes.md", SHAPES)])
        Upload.objects.filter(pk=expired.pk).update(expires_at=timezone.now())
        with self.assertRaisesMessage(services.CourseError, "expired"):
            services.confirm(expired, self.editor)
        done = self.preview([("shapes.md", SHAPES)])
        services.confirm(done, self.editor)
        with self.assertRaisesMessage(services.CourseError, "already imported"):
            services.confirm(done, self.editor)
        dropped = self.preview([("shapes.md", SHAPES)])
        services.discard(dropped)
        with self.assertRaisesMessage(services.CourseError, "discarded"):
            services.confirm(dropped, self.editor)
        self.assertEqual(Note.objects.count(), 1)

    def test_it_keeps_a_notes_cards_file_for_the_export_and_drops_it_with_the_cards(self) -> None:
        self.import_notes([("shapes.md", SHAPES), ("cards/shapes.toml", CURATED)])
        course = self.fresh_team().course
        self.assertEqual(CourseFile.objects.get(course=course, path="cards/shapes.toml").text, CURATED)
        self.import_notes([("shapes.md", SHAPES)])
        self.assertFalse(CourseFile.objects.filter(path="cards/shapes.toml").exists())
