"""The course pages (courses.views) and the team page's course section, seen by the three personas: an editor
uploads, reads the import report and confirms; a member reads the course; an outsider meets a 404 everywhere."""

from __future__ import annotations

import io
import zipfile

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from cards.models import Card, Note
from courses.models import Upload
from tests.courses.base import AUTOGRAD, CURATED, SHAPES, CourseTestCase

HOSTILE = """\
# 攻击

## 脚本

张量的形状用 **`x.shape`** 查看。<script>alert(1)</script><img src="x" onerror="alert(2)">
"""
# A curated card's faces are used as written: raw HTML reaches the renderer, which must strip it.
HOSTILE_CARDS = """\
[[card]]
id = "hostile"
section = "脚本"
kind = "qa"
front = "形状? <img src=x onerror=alert(2)>"
back = "`x.shape` <script>alert(1)</script>"
"""


class PageTestCase(CourseTestCase):
    def url(self, name: str, *args: object) -> str:
        return reverse(f"courses:{name}", args=[self.team.slug, *args])

    def upload_files(self, *files: tuple[str, str]) -> object:
        self.client.force_login(self.editor)
        sent = [SimpleUploadedFile(name, text.encode(), content_type="text/markdown") for name, text in files]
        return self.client.post(self.url("upload"), {"files": sent})


class CoursePageTests(PageTestCase):
    def test_it_shows_the_course_to_members_with_the_upload_form_for_editors_only(self) -> None:
        self.client.force_login(self.editor)
        page = self.client.get(self.url("course"))
        self.assertContains(page, 'data-testid="upload-form"')
        self.client.force_login(self.member)
        page = self.client.get(self.url("course"))
        self.assertEqual(page.status_code, 200)
        self.assertNotContains(page, 'data-testid="upload-form"')
        self.assertContains(page, 'data-testid="course-empty"')

    def test_it_is_a_404_for_an_outsider_on_every_page(self) -> None:
        upload = self.preview([("shapes.md", SHAPES)])
        self.client.force_login(self.outsider)
        gets = [self.url("course"), self.url("upload_detail", upload.uuid), self.url("export")]
        posts = [self.url("upload"), self.url("confirm", upload.uuid), self.url("discard", upload.uuid)]
        for url in gets:
            self.assertEqual(self.client.get(url).status_code, 404, url)
        for url in posts:
            self.assertEqual(self.client.post(url).status_code, 404, url)
        self.assertEqual(self.client.get(reverse("teams:detail", args=[self.team.slug])).status_code, 404)
        self.assertEqual(Upload.objects.get().state, Upload.State.PREVIEW)

    def test_it_is_a_403_for_a_member_who_is_not_an_editor(self) -> None:
        upload = self.preview([("shapes.md", SHAPES)])
        self.client.force_login(self.member)
        for url in (self.url("upload_detail", upload.uuid), self.url("export")):
            self.assertEqual(self.client.get(url).status_code, 403, url)
        for url in (self.url("upload"), self.url("confirm", upload.uuid), self.url("discard", upload.uuid)):
            self.assertEqual(self.client.post(url).status_code, 403, url)
        self.assertFalse(Note.objects.exists())


class UploadFlowTests(PageTestCase):
    def test_it_shows_the_report_then_imports_on_confirmation(self) -> None:
        response = self.upload_files(("autograd.md", AUTOGRAD), ("shapes.md", SHAPES))
        upload = Upload.objects.get()
        self.assertRedirects(response, self.url("upload_detail", upload.uuid))
        self.assertFalse(Note.objects.exists())
        page = self.client.get(self.url("upload_detail", upload.uuid))
        self.assertContains(page, "9 cards to create, 0 to change, 0 to retire", html=False)
        self.assertContains(page, 'data-testid="preview-card"', count=2 + 1 + 2 + 1 + 1)
        for kind in ("qa", "cloze", "mapping", "output"):
            self.assertContains(page, f'data-kind="{kind}"')
        self.assertContains(page, "<code>torch.cat</code>")  # rendered as the review page renders it
        page = self.client.post(self.url("confirm", upload.uuid), follow=True)
        self.assertRedirects(page, self.url("course"))
        self.assertEqual(Card.objects.filter(note__course__team=self.team).count(), 9)
        self.assertContains(page, "Imported 2 notes into the course: 9 new cards, 0 changed, 0 retired.")
        self.assertContains(page, 'data-note="autograd"')

    def test_its_message_after_a_re_upload_counts_changed_and_retired_cards(self) -> None:
        self.upload_files(("autograd.md", AUTOGRAD))
        self.client.post(self.url("confirm", Upload.objects.get().uuid), follow=True)  # its message read
        changed = AUTOGRAD.replace("张量是否需要梯度", "张量是否要求梯度")
        changed = changed.replace("| `x.clamp` | `np.clip` |\n", "")
        self.upload_files(("autograd.md", changed))
        upload = Upload.objects.get(state=Upload.State.PREVIEW)
        report = self.client.get(self.url("upload_detail", upload.uuid))
        self.assertContains(report, "0 cards to create, 3 to change, 2 to retire", html=False)
        page = self.client.post(self.url("confirm", upload.uuid), follow=True)
        self.assertContains(page, "Imported 1 note into the course: 0 new cards, 3 changed, 2 retired.")

    def test_it_takes_a_pasted_note_with_its_file_name(self) -> None:
        self.client.force_login(self.editor)
        response = self.client.post(self.url("upload"), {"paste_name": "shapes", "paste_text": SHAPES})
        upload = Upload.objects.get()
        self.assertRedirects(response, self.url("upload_detail", upload.uuid))
        self.assertEqual(upload.files[0]["name"], "shapes.md")

    def test_it_takes_a_zip_with_cards_files(self) -> None:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("c/shapes.md", SHAPES)
            archive.writestr("c/cards/shapes.toml", CURATED)
        self.client.force_login(self.editor)
        sent = SimpleUploadedFile("c.zip", buffer.getvalue(), content_type="application/zip")
        self.client.post(self.url("upload"), {"files": [sent]})
        self.assertIn("怎样查看张量 `x` 的形状?", Upload.objects.get().report["notes"][0]["created"])

    def test_it_shows_every_problem_and_keeps_nothing(self) -> None:
        response = self.upload_files(("prose.md", "# 随笔\n\n只是文字。\n"), ("bad.md", "\0"))
        self.assertEqual(response.status_code, 400)
        self.assertContains(response, 'data-testid="upload-problems"', status_code=400)
        self.assertContains(response, "prose.md: gives no card", status_code=400)
        self.assertContains(response, "bad.md: looks like a binary file", status_code=400)
        self.assertFalse(Upload.objects.exists())

    @override_settings(COURSE_UPLOAD_MAX_BYTES=50)
    def test_it_refuses_an_upload_over_the_cap_before_reading_it(self) -> None:
        response = self.upload_files(("autograd.md", AUTOGRAD))
        self.assertContains(response, "over this site&#x27;s limit of 50 bytes", status_code=400)
        self.assertFalse(Upload.objects.exists())

    def test_it_sanitises_the_notes_markdown_on_the_report_and_in_the_cards(self) -> None:
        self.upload_files(("hostile.md", HOSTILE), ("hostile.toml", HOSTILE_CARDS))
        upload = Upload.objects.get()
        self.assertIn("onerror", str(upload.report))  # the report keeps the author's Markdown as written
        page = self.client.get(self.url("upload_detail", upload.uuid))
        self.assertContains(page, 'data-testid="preview-card"')
        self.assertNotRegex(page.content.decode(), r"<script>alert|<img[^>]*onerror")  # as text it may show
        self.client.post(self.url("confirm", upload.uuid))
        for card in Card.objects.all():
            self.assertNotIn("<script", card.front_html + card.back_html)
            self.assertNotIn("onerror", card.front_html + card.back_html)

    def test_it_discards_a_preview(self) -> None:
        self.upload_files(("shapes.md", SHAPES))
        upload = Upload.objects.get()
        self.assertRedirects(self.client.post(self.url("discard", upload.uuid)), self.url("course"))
        upload.refresh_from_db()
        self.assertEqual((upload.state, upload.files), (Upload.State.DISCARDED, []))
        self.client.post(self.url("confirm", upload.uuid))
        self.assertFalse(Note.objects.exists())

    def test_it_exports_the_course_as_a_zip_of_its_folder(self) -> None:
        self.import_notes([("shapes.md", SHAPES), ("cards/shapes.toml", CURATED)])
        self.client.force_login(self.editor)
        response = self.client.get(self.url("export"))
        self.assertEqual(response["Content-Type"], "application/zip")
        course = self.fresh_team().course
        with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
            self.assertEqual(archive.namelist(), [f"{course.slug}/cards/shapes.toml", f"{course.slug}/shapes.md"])
            self.assertEqual(archive.read(f"{course.slug}/shapes.md").decode(), SHAPES)


class TeamPageTests(PageTestCase):
    def test_it_reads_the_course_in_a_fixed_number_of_queries(self) -> None:
        self.import_notes([("shapes.md", SHAPES)])
        self.client.force_login(self.member)
        team_page = reverse("teams:detail", args=[self.team.slug])
        with CaptureQueriesContext(connection) as small:
            self.client.get(team_page)
        self.import_notes([("autograd.md", AUTOGRAD), ("other.md", AUTOGRAD.replace("自动求导", "其他"))])
        with CaptureQueriesContext(connection) as large:
            self.assertContains(self.client.get(team_page), 'data-note="other"')
        self.assertEqual(len(large), len(small))

    def test_it_shows_the_course_on_the_team_page_with_upload_and_export_for_editors(self) -> None:
        self.import_notes([("autograd.md", AUTOGRAD)])
        team_page = reverse("teams:detail", args=[self.team.slug])
        self.client.force_login(self.member)
        page = self.client.get(team_page)
        self.assertContains(page, 'data-note="autograd"')
        self.assertContains(page, "Mapping 4")
        self.assertNotContains(page, 'data-testid="course-export"')
        self.client.force_login(self.editor)
        page = self.client.get(team_page)
        self.assertContains(page, 'data-testid="course-export"')
        self.assertContains(page, 'data-testid="course-upload-link"')
