"""A course as a folder (courses.folders, manage.py import_course / export_course): a team's course imported
from the repository's layout with its drills under the course's slugs, exported back byte for byte, and the
bundled content imported the same way."""

from __future__ import annotations

import tempfile
from io import StringIO
from pathlib import Path

from django.conf import settings
from django.core.management import CommandError, call_command

from cards import learning
from cards.importing import load_sources
from cards.models import Card, LearningStage, Note
from courses import folders
from graders.management.commands.import_drills import import_drills
from graders.models import Drill
from teams import services as team_services
from tests.courses.base import SCALE, CourseTestCase, write_course

NOTES = Path(settings.BASE_DIR) / "notes"


def run(*args: str) -> str:
    out = StringIO()
    call_command("import_course", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def cards_of(team_course: object) -> set[tuple[object, ...]]:
    """A course's cards less what ties them to the course (keys, slugs, ids)."""
    rows = Card.objects.filter(note__course=team_course).select_related("note")
    return {
        (c.note.slug.split("--", 1)[1], c.kind, c.front, c.back, c.heading_path, c.anchor, c.position, c.active)
        for c in rows
    }


class TeamFolderTests(CourseTestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.folder = write_course(self.tmp / "course")

    def test_it_imports_a_folder_into_the_teams_course_with_its_drills_under_the_courses_slugs(self) -> None:
        out = run(str(self.folder), "--team", self.team.slug)
        course = self.fresh_team().course
        self.assertIn(f"course {course.slug!r}: 2 notes, 9 card changes; drills: 1 created", out)
        drill = Drill.objects.select_related("card__note").get()
        self.assertEqual(drill.slug, f"{course.slug}--scale-by-three")
        self.assertEqual(drill.card.key, f"drill:{course.slug}--scale-by-three")
        self.assertEqual(drill.card.note.slug, f"{course.slug}--autograd")
        self.assertIn('slug = "scale-by-three"', drill.definition)  # stored as written
        self.assertIn("unchanged", run(str(self.folder), "--team", self.team.slug))
        self.assertEqual(Card.objects.count(), 9 + 1)

    def test_it_keeps_two_teams_courses_apart(self) -> None:
        run(str(self.folder), "--team", self.team.slug)
        run(str(self.folder), "--team", self.other_team.slug)
        self.assertEqual(Drill.objects.filter(active=True).count(), 2)
        (self.folder / "drills" / "autograd" / "scale-by-three.toml").unlink()
        (self.folder / "drills" / "autograd" / "other.toml").write_text(SCALE.replace("scale-by-three", "other"))
        run(str(self.folder), "--team", self.team.slug)  # retires its own drill, never the other team's
        mine, theirs = self.fresh_team().course, self.other_team.__class__.objects.get(pk=self.other_team.pk).course
        self.assertFalse(Drill.objects.get(slug=f"{mine.slug}--scale-by-three").active)
        self.assertTrue(Drill.objects.get(slug=f"{theirs.slug}--scale-by-three").active)

    def test_a_dry_run_writes_nothing(self) -> None:
        out = run(str(self.folder), "--team", self.team.slug, "--dry-run")
        self.assertIn("Dry run, nothing written", out)
        self.assertIn("drills: 1 created", out)
        self.assertFalse(Note.objects.exists() or Drill.objects.exists() or Card.objects.exists())
        self.assertIsNone(self.fresh_team().course_id)

    def test_it_writes_nothing_when_a_drill_file_has_a_mistake(self) -> None:
        (self.folder / "drills" / "autograd" / "broken.toml").write_text('slug = "broken"\n')
        with self.assertRaisesMessage(CommandError, "broken.toml"):
            run(str(self.folder), "--team", self.team.slug)
        self.assertFalse(Note.objects.exists() or Card.objects.exists())
        self.assertIsNone(self.fresh_team().course_id)

    def test_it_leaves_a_teams_learning_order_file_out_with_a_warning(self) -> None:
        (self.folder / "learning-order.toml").write_text((NOTES / "learning-order.toml").read_text())
        report = folders.import_folder(self.folder, self.fresh_team())
        self.assertFalse(LearningStage.objects.exists())
        self.assertIn("no learning order of its own", report.warnings[0])

    def test_an_export_imported_into_a_fresh_team_gives_the_same_cards(self) -> None:
        run(str(self.folder), "--team", self.team.slug)
        out = self.tmp / "exported"
        call_command("export_course", str(out), "--team", self.team.slug, stdout=StringIO())
        for path in ("autograd.md", "shapes.md", "cards/shapes.toml", "drills/autograd/scale-by-three.toml"):
            self.assertEqual((out / path).read_bytes(), (self.folder / path).read_bytes(), path)
        fresh = team_services.create_team(self.member, "Fresh team", "UTC")
        run(str(out), "--team", fresh.slug)
        fresh.refresh_from_db()
        self.assertEqual(cards_of(fresh.course), cards_of(self.fresh_team().course))
        self.assertEqual(len(cards_of(fresh.course)), 9 + 1)
        versions = {d.slug.split("--", 1)[1]: d.version for d in Drill.objects.all()}
        self.assertEqual(versions, {"scale-by-three": Drill.objects.get(card__note__course=fresh.course).version})

    def test_an_export_never_overwrites(self) -> None:
        run(str(self.folder), "--team", self.team.slug)
        with self.assertRaisesMessage(CommandError, "is not an empty folder"):
            call_command("export_course", str(self.folder), "--team", self.team.slug, stdout=StringIO())


class BundledFolderTests(CourseTestCase):
    def test_the_bundled_content_is_a_course_imported_and_exported_as_a_folder(self) -> None:
        out = run(str(NOTES))
        self.assertIn("course 'pytorch': 5 notes", out)
        self.assertIn("drills: 79 created", out)
        self.assertTrue(LearningStage.objects.exists())
        # What import_notes, import_drills and import_learning_order would change now: nothing.
        self.assertIn("0 card changes", run(str(NOTES), "--dry-run"))
        quiet = StringIO()
        call_command("import_notes", str(NOTES), "--dry-run", stdout=quiet)
        self.assertIn("5 notes, 0 card changes", quiet.getvalue())
        self.assertEqual(import_drills(NOTES / "drills").created, [])
        bundled = {source.slug for source in load_sources([str(NOTES)])[0]}
        self.assertEqual(bundled, set(Note.objects.values_list("slug", flat=True)))
        out_dir = Path(tempfile.mkdtemp()) / "bundled"
        call_command("export_course", str(out_dir), stdout=StringIO())
        exported = sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if p.is_file())
        for path in exported:
            if path != "learning-order.toml":
                self.assertEqual((out_dir / path).read_bytes(), (NOTES / path).read_bytes(), path)
        self.assertEqual(len(exported), 5 + 5 + 79 + 1)
        # The exported order file reads back to the same stages, concepts included.
        again = learning.read_order_file(out_dir / "learning-order.toml")
        self.assertEqual(again, learning.read_order_file(NOTES / "learning-order.toml"))
        self.assertTrue(all(spec.concepts for spec in again))
