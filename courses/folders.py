"""A course as a folder in the repository's own layout (``manage.py import_course`` / ``export_course``, and
the course page's download), so a course can live in git and be reviewed like code:

    FOLDER/<note>.md                  the notes
    FOLDER/cards/<note>.toml          a note's curated cards (``cards.ingest.curated``), where it has them
    FOLDER/drills/<note>/<slug>.toml  the drills (``graders.drills``), by the note they come from
    FOLDER/learning-order.toml        the learning order (the bundled course's; a team's is left out)

The bundled content is itself a course imported this way (``import_course notes/``: what ``make run``
does). Importing is ``import_notes`` and ``import_drills`` with the course: keys stay stable, cards are
retired and never deleted, a heading rename keeps history; a team's note and drill slugs are stored under
its course's (``Course.qualified``) and the export writes them back as their author named them.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.core.management.base import CommandError
from django.db import transaction

from cards import learning
from cards.importing import NoteFileError, NoteReport, NoteSource, import_notes, load_sources, sources_from_uploads
from cards.models import Course, LearningStage, Note, bundled_course
from graders.drills.schema import DrillError, load_drills
from graders.management.commands.import_drills import Report as DrillReport
from graders.management.commands.import_drills import import_drills
from graders.models import Drill
from teams.models import Team

from .models import CourseFile
from .services import course_of, create_course, write_files

ORDER_FILE = "learning-order.toml"
DRILL_SLUG_MAX = 120  # graders.Drill.slug


class FolderError(Exception):
    """The folder cannot be imported; nothing was written. The message names every bad file."""


@dataclass
class FolderReport:
    course: Course
    notes: list[NoteReport] = field(default_factory=list)
    drills: DrillReport | None = None
    order: learning.ImportReport | None = None
    verified: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def import_folder(
    folder: Path,
    team: Team | None = None,
    *,
    dry_run: bool = False,
    on_note: Callable[[NoteReport], None] | None = None,
) -> FolderReport:
    """Import ``folder`` into the team's course (made now if the team has none) or, without a team, into the
    bundled course.

    Steps: 1. read and check every note and drill file (``FolderError`` listing the bad ones, nothing
    written); 2. in one transaction, with the team's row locked: the notes, the course's files, the drills
    and (bundled) the learning order; 3. a dry run does all of it and rolls it back, so its report is exactly
    what a real run would do.
    """
    if not folder.is_dir():
        raise FolderError(f"{folder}: no such folder.")
    with transaction.atomic():
        locked = Team.objects.select_for_update().get(pk=team.pk) if team else None
        course = (locked.course or create_course(locked)) if locked else bundled_course()
        sources, warnings = _note_sources(folder, course)
        drills = _checked_drills(folder / "drills", course)
        report = FolderReport(course, warnings=warnings)
        try:
            report.notes = import_notes(sources, course=course, on_note=on_note, on_verified=report.verified.append)
        except NoteFileError as exc:
            raise FolderError(str(exc)) from None
        write_files(course, sources)
        if drills:
            try:
                report.drills = import_drills(folder / "drills", course)
            except CommandError as exc:
                raise FolderError(str(exc)) from None
        report.order = _learning_order(folder, course, report.warnings)
        if dry_run:
            transaction.set_rollback(True)
    return report


def _note_sources(folder: Path, course: Course) -> tuple[list[NoteSource], list[str]]:
    """The bundled course's notes as ``import_notes notes/`` reads them (the same paths, so nothing moves);
    a team's as an upload of the same files would be (the same checks and names as the course page)."""
    try:
        if course.is_bundled:
            return load_sources([str(folder)])
        files = [(path.name, path.read_bytes()) for path in sorted(folder.glob("*.md"))]
        files += [(f"cards/{path.name}", path.read_bytes()) for path in sorted(folder.glob("cards/*.toml"))]
        if not files:
            return [], [f"{folder}: no markdown (*.md) files in this folder, no note imported from it."]
        return sources_from_uploads(files, course.qualified), []
    except NoteFileError as exc:
        raise FolderError(str(exc)) from None


def _checked_drills(drills: Path, course: Course) -> bool:
    """Whether the folder has drills; ``FolderError`` for a drill file with a mistake, before any write."""
    if not drills.is_dir():
        return False
    try:
        specs = load_drills(drills)
    except DrillError as exc:
        raise FolderError(str(exc)) from None
    long = [slug for slug in specs if len(course.qualified(slug)) > DRILL_SLUG_MAX]
    if long:
        raise FolderError(f"drill slugs too long for this course (at most {DRILL_SLUG_MAX}): {', '.join(long)}")
    return bool(specs)


def _learning_order(folder: Path, course: Course, warnings: list[str]) -> learning.ImportReport | None:
    path = folder / ORDER_FILE
    if not path.is_file():
        return None
    if not course.is_bundled:
        warnings.append(f"{path}: a team's course has no learning order of its own yet; the file was left out.")
        return None
    try:
        return learning.import_stages(learning.read_order_file(path))
    except learning.OrderFileError as exc:
        raise FolderError(str(exc)) from None


# ------------------------------------------------------------------------------ export


def folder_files(course: Course) -> dict[str, str]:
    """The course's folder: every file's path in it and its text (notes as uploaded, drills as their stored
    TOML, which names the drill's own slug), sorted by path."""
    files = {f.path: f.text for f in CourseFile.objects.filter(course=course)}
    for note in Note.objects.filter(course=course).order_by("slug"):
        files.setdefault(f"{course.unqualified(note.slug)}.md", note.content)  # a note imported before its files
    drills = Drill.objects.filter(card__note__course=course, active=True).select_related("card__note")
    for drill in drills:
        note = course.unqualified(drill.card.note.slug)
        files[f"drills/{note}/{course.unqualified(drill.slug)}.toml"] = drill.definition
    if course.is_bundled and LearningStage.objects.exists():
        files[ORDER_FILE] = order_file_text()
    return dict(sorted(files.items()))


def order_file_text() -> str:
    """The stored learning order as ``read_order_file`` reads it (TOML strings written as JSON ones)."""
    lines = ["# The learning order for new cards (exported by manage.py export_course).", ""]
    for stage in LearningStage.objects.order_by("rank", "slug"):
        lines += ["[[stage]]", f"slug = {_toml(stage.slug)}", f"title = {_toml(stage.title)}", "sections = ["]
        lines += [f"  {{ note = {_toml(s['note'])}, headings = {_toml(s['headings'])} }}," for s in stage.sections]
        lines += ["]", ""]
        for concept in stage.concepts:
            lines.append("[[stage.concept]]")
            for name, value in concept.items():
                if name == "headings":
                    tables = [f"{{ note = {_toml(s['note'])}, headings = {_toml(s['headings'])} }}" for s in value]
                    lines.append(f"headings = [{', '.join(tables)}]")
                else:
                    lines.append(f"{name} = {_toml(value)}")
            lines.append("")
    return "\n".join(lines)


def _toml(value: object) -> str:
    """A string or a list of strings as TOML (a JSON string is a TOML basic string)."""
    return json.dumps(value, ensure_ascii=False)


def zip_bytes(course: Course, top: str) -> bytes:
    """The course's folder as a zip, under one folder named ``top``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, text in folder_files(course).items():
            archive.writestr(f"{top}/{path}", text)
    return buffer.getvalue()


def write_folder(course: Course, out: Path) -> list[Path]:
    """Write the course's folder into ``out`` (missing or empty: an export never overwrites a file)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FolderError(f"{out}: exists and is not an empty folder; pick a new one.")
    written = []
    for path, text in folder_files(course).items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def team_course(team: Team) -> Course | None:
    """The team's course, ``None`` while it has none (nothing to export)."""
    course = course_of(team)
    return course if course.pk else None
