"""The course endpoints of the API (api.course_views): members read the course's notes and drills, editors
preview and confirm uploads, with the same checks as the pages; an outsider gets 404 on every one."""

from __future__ import annotations

import io
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from cards.models import Note
from courses.folders import import_folder
from courses.models import Upload
from graders.models import Drill, Submission
from tests.courses.base import AUTOGRAD, SHAPES, CourseTestCase, write_course
from tests.graders.conftest import graded_submission

BASE = "/api/v1/teams/{team}/course/"


class ApiTestCase(CourseTestCase):
    def setUp(self) -> None:
        cache.clear()  # throttle counters

    def client_for(self, user: object) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
        return client

    def url(self, tail: str = "") -> str:
        return BASE.format(team=self.team.slug) + tail


class ReadTests(ApiTestCase):
    def setUp(self) -> None:
        super().setUp()
        import_folder(write_course(Path(tempfile.mkdtemp()) / "c"), self.fresh_team())

    def test_it_gives_members_the_course_its_notes_and_its_drills(self) -> None:
        member = self.client_for(self.member)
        course = member.get(self.url()).json()
        self.assertEqual((course["notes"], course["drills"], course["can_edit"]), (2, 1, False))
        self.assertEqual(course["kinds"]["mapping"], 4)
        notes = member.get(self.url("notes/")).json()
        self.assertEqual([n["slug"] for n in notes], ["shapes", "autograd"])  # by title: 形状, 自动求导
        note = member.get(self.url("notes/autograd/")).json()
        self.assertEqual(note["content"], AUTOGRAD)
        self.assertEqual(note["deck"], f"{self.fresh_team().course.slug}--autograd")
        self.assertEqual(member.get(f"/api/v1/decks/{note['deck']}/cards/").status_code, 200)
        drill = Drill.objects.get()
        graded_submission(self.member, drill, "accepted", datetime(2026, 3, 1, tzinfo=UTC))
        graded_submission(self.editor, drill, "wrong_answer", datetime(2026, 3, 1, tzinfo=UTC))
        (row,) = member.get(self.url("drills/")).json()
        self.assertEqual(
            (row["slug"], row["drill"], row["attempted"], row["solved"]), ("scale-by-three", drill.slug, 2, 1)
        )
        self.assertTrue(self.client_for(self.editor).get(self.url()).json()["can_edit"])

    def test_it_is_a_404_for_an_outsider_everywhere(self) -> None:
        upload = self.preview([("shapes.md", SHAPES.replace("相同", "一样"))])
        outsider = self.client_for(self.outsider)
        for tail in ("", "notes/", "notes/autograd/", "drills/", f"uploads/{upload.uuid}/"):
            self.assertEqual(outsider.get(self.url(tail)).status_code, 404, tail)
        for tail in ("uploads/", f"uploads/{upload.uuid}/confirm/"):
            self.assertEqual(
                outsider.post(self.url(tail), {"files": [{"name": "x.md", "text": SHAPES}]}).status_code, 404
            )
        drill = Drill.objects.get()
        self.assertEqual(outsider.get(f"/api/v1/drills/{drill.slug}/").status_code, 404)
        self.assertEqual(outsider.get(f"/api/v1/decks/{Note.objects.first().slug}/").status_code, 404)
        self.assertEqual(Upload.objects.get().state, Upload.State.PREVIEW)
        self.assertFalse(Submission.objects.exists())

    def test_it_is_a_403_for_a_member_on_what_editors_do(self) -> None:
        upload = self.preview([("shapes.md", SHAPES.replace("相同", "一样"))])
        member = self.client_for(self.member)
        self.assertEqual(
            member.post(self.url("uploads/"), {"files": [{"name": "x.md", "text": SHAPES}]}).status_code, 403
        )
        self.assertEqual(member.get(self.url(f"uploads/{upload.uuid}/")).status_code, 403)
        self.assertEqual(member.post(self.url(f"uploads/{upload.uuid}/confirm/")).status_code, 403)
        self.assertEqual(Upload.objects.count(), 1)


class WriteTests(ApiTestCase):
    def test_it_says_a_team_has_no_course_yet(self) -> None:
        response = self.client_for(self.member).get(self.url())
        self.assertEqual(response.status_code, 404)
        self.assertIn("no course yet", response.json()["error"]["message"])

    def test_an_editor_previews_then_confirms(self) -> None:
        editor = self.client_for(self.editor)
        response = editor.post(
            self.url("uploads/"), {"files": [{"name": "autograd.md", "text": AUTOGRAD}]}, format="json"
        )
        self.assertEqual(response.status_code, 201, response.content)
        body = response.json()
        self.assertEqual(body["state"], "preview")
        self.assertEqual(len(body["notes"][0]["created"]), 8)
        self.assertFalse(Note.objects.exists())
        self.assertEqual(editor.get(self.url(f"uploads/{body['uuid']}/")).json()["notes"], body["notes"])
        done = editor.post(self.url(f"uploads/{body['uuid']}/confirm/"))
        self.assertEqual(done.status_code, 200, done.content)
        self.assertEqual(done.json()["notes"], [{"slug": "autograd", "created": 8, "changed": 0, "retired": 0}])
        self.assertIn("1 waiting for a sandbox run", done.json()["verified"][0])
        again = editor.post(self.url(f"uploads/{body['uuid']}/confirm/"))
        self.assertEqual(again.status_code, 400)
        self.assertIn("already imported", again.json()["error"]["details"]["upload"][0])

    def test_it_answers_409_when_the_course_changed_since_the_preview(self) -> None:
        self.import_notes([("shapes.md", SHAPES)])
        editor = self.client_for(self.editor)
        ours = editor.post(
            self.url("uploads/"), {"files": [{"name": "shapes.md", "text": SHAPES + "\n补充。\n"}]}
        ).json()
        self.import_notes([("shapes.md", SHAPES.replace("相同", "一样"))])
        response = editor.post(self.url(f"uploads/{ours['uuid']}/confirm/"))
        self.assertEqual(response.status_code, 409)
        self.assertEqual(response.json()["error"]["code"], "conflict")
        self.assertNotIn("补充", Note.objects.get().content)

    def test_it_takes_multipart_files_and_zips(self) -> None:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("c/shapes.md", SHAPES)
        zipped = io.BytesIO(buffer.getvalue())
        zipped.name = "c.zip"
        note = io.BytesIO(AUTOGRAD.encode())
        note.name = "autograd.md"
        response = self.client_for(self.editor).post(
            self.url("uploads/"), {"files": [zipped, note]}, format="multipart"
        )
        self.assertEqual(response.status_code, 201, response.content)
        self.assertEqual({n["slug"] for n in response.json()["notes"]}, {"shapes", "autograd"})

    def test_it_lists_every_problem_and_keeps_nothing(self) -> None:
        files = [{"name": "prose.md", "text": "# 随笔\n\n文字。\n"}, {"name": "x.png", "text": "png"}]
        response = self.client_for(self.editor).post(self.url("uploads/"), {"files": files}, format="json")
        self.assertEqual(response.status_code, 400)
        problems = response.json()["error"]["details"]["files"]
        self.assertTrue(any("x.png: is neither" in p for p in problems))
        self.assertTrue(any("prose.md: gives no card" in p for p in problems))
        self.assertFalse(Upload.objects.exists())
