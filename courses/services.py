"""Writing a team's course through the site (web process): uploads previewed, then confirmed.

The views and the API call these; these call the notes importer (``cards.importing``). An editor's notes
reach the database in two steps, and every refusal happens before the first write:

1. ``gather`` unpacks what was sent (files, zips, pasted text) within the team's byte cap;
   ``preview`` checks the notes, plans their import against the database (a dry run), checks the caps and
   keeps the upload with its report (``Upload``): nothing of the course is written yet.
2. ``confirm`` imports the kept notes with the team's row locked, in one transaction, and compares what it
   did with the plan the editor saw: a different plan means someone changed the course in between, so the
   transaction is rolled back and the preview is refreshed for the editor to read again.

Output cards go live only once the sandbox ran them: the importer hands them to the ``outputs`` verifier,
which queues their runs for the worker after the commit (``outputs.verify``), as for the bundled notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from cards.importing import IMPORTED_KINDS, NoteFileError, NoteReport, NoteSource, import_notes, uploaded_sources
from cards.ingest import ParsedNote, parse_note
from cards.ingest.curated import CuratedError
from cards.models import BUNDLED_COURSE, Card, Course, Note
from outputs.models import OutputCheck
from teams.models import Membership, Team

from . import archive, reports
from .models import CourseFile, Upload

COURSE_SLUG_MAX = 60
# Files of a course's folder that a notes upload leaves alone (a course folder's zip holds them too).
_NOT_NOTES = ("learning-order.toml", "corrections.toml")
# Previews and discarded uploads are dropped this long after they expired; confirmed ones are kept (history).
KEEP_EXPIRED = timedelta(days=1)


class CourseError(Exception):
    """A request the rules refuse; ``problems`` are shown to the editor, one per line (file: line: why)."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class CourseChanged(CourseError):
    """The course's notes changed since the preview: nothing was imported, the preview shows the new plan."""


@dataclass(frozen=True)
class Caps:
    """Per team (settings.COURSE_*): what one upload may hold and what a course may grow to."""

    upload_bytes: int
    notes: int
    cards: int
    uploads_per_hour: int
    ttl: timedelta

    @classmethod
    def from_settings(cls) -> Caps:
        return cls(
            upload_bytes=settings.COURSE_UPLOAD_MAX_BYTES,
            notes=settings.COURSE_MAX_NOTES,
            cards=settings.COURSE_MAX_CARDS,
            uploads_per_hour=settings.COURSE_UPLOADS_PER_HOUR,
            ttl=timedelta(minutes=settings.COURSE_UPLOAD_TTL_MINUTES),
        )


def can_edit(membership: Membership) -> bool:
    return membership.can_edit_course


# ------------------------------------------------------------------------------ the team's course


def course_slug_for(team: Team) -> str:
    """The slug of the course a team's first upload makes: the team's own, without ``--`` (the separator of
    stored slugs), within a course slug's length, never another course's nor the bundled one's."""
    base = re.sub(r"-{2,}", "-", team.slug)[:COURSE_SLUG_MAX].strip("-") or "course"
    taken = set(Course.objects.filter(slug__startswith=base[:40]).values_list("slug", flat=True)) | {BUNDLED_COURSE}
    if base not in taken:
        return base
    suffix = f"-{team.uuid.hex[:8]}"
    return f"{base[: COURSE_SLUG_MAX - len(suffix)].strip('-')}{suffix}"


def course_of(team: Team) -> Course:
    """The team's course; an unsaved one (what the first upload will make) while it has none, so a preview
    plans against the course the confirmation writes, and a preview writes nothing."""
    if team.course_id is not None:
        return team.course
    return Course(slug=course_slug_for(team), title=team.name, public=False)


def create_course(team: Team) -> Course:
    """Call with the team's row locked: the course the team's first confirmed upload makes."""
    course = Course.objects.create(slug=course_slug_for(team), title=team.name, public=False)
    team.course = course
    team.save(update_fields=["course"])
    return course


# ------------------------------------------------------------------------------ 1. what was sent


@dataclass
class Incoming:
    """The files an editor sent, unpacked: (name, bytes) each, and what was left out (with why)."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    size: int = 0


def gather(uploads: list[tuple[str, bytes]], caps: Caps) -> Incoming:
    """Unpack zips (``courses.archive``), leave out a course folder's drills and order file, and hold the
    whole upload to the team's byte cap (a zip counted unpacked). ``CourseError`` lists every problem."""
    incoming = Incoming()
    problems: list[str] = []
    for name, data in uploads:
        if archive.is_zip(name, data):
            try:
                unpacked = archive.unpack(name, data, caps.upload_bytes - incoming.size)
            except archive.ArchiveError as exc:
                problems.append(str(exc))
                continue
            incoming.skipped += [_("%(file)s: left out (not part of a course)") % {"file": s} for s in unpacked.skipped]
            members = unpacked.files
        else:
            members = [(name, data)]
        for member, content in members:
            _take(incoming, member, content)
    if incoming.size > caps.upload_bytes:
        problems.append(
            _("The upload holds %(size)d bytes, over this site's limit of %(cap)d bytes an upload.")
            % {"size": incoming.size, "cap": caps.upload_bytes}
        )
    if not incoming.files and not problems:
        problems.append(_("The upload holds no note: send Markdown files (.md), a zip of them, or paste one."))
    if problems:
        raise CourseError(problems)
    return incoming


def _take(incoming: Incoming, name: str, content: bytes) -> None:
    parts = name.split("/")
    if "drills" in parts[:-1]:
        incoming.skipped.append(
            _("%(file)s: a drill, left out: notes uploads bring notes; drills are written in the drill editor.")
            % {"file": name}
        )
    elif parts[-1] in _NOT_NOTES:
        incoming.skipped.append(_("%(file)s: left out: a notes upload does not change it.") % {"file": name})
    else:
        incoming.files.append((name, content))
        incoming.size += len(content)


# ------------------------------------------------------------------------------ 2. the preview


def preview(team: Team, user: AbstractBaseUser, incoming: Incoming, caps: Caps | None = None) -> Upload:
    """Check and plan the notes (a dry run) and keep them with their report; nothing of the course is written.

    ``CourseError`` when a rule refuses them: the uploads-per-hour cap, a file that is no note, a curated
    cards file with mistakes, a note that gives no card, a name another note of the upload has, or a course
    that would pass its notes or cards cap.
    """
    caps = caps or Caps.from_settings()
    now = timezone.now()
    recent = Upload.objects.of_team(team).since(now - timedelta(hours=1)).count()
    if recent >= caps.uploads_per_hour:
        raise CourseError(
            ngettext(
                "This team has uploaded %(n)d time in the last hour, the most this site allows; try again later.",
                "This team has uploaded %(n)d times in the last hour, the most this site allows; try again later.",
                recent,
            )
            % {"n": recent}
        )
    course = course_of(team)
    sources, parsed = checked(course, incoming.files, caps)
    base = reports.base_of(sources)
    try:
        planned = import_notes(sources, course=course, dry_run=True, parsed=parsed)
    except NoteFileError as exc:
        raise CourseError(str(exc).splitlines()) from None
    with transaction.atomic():
        stale = Upload.objects.of_team(team).exclude(state=Upload.State.CONFIRMED)
        stale.filter(expires_at__lt=now - KEEP_EXPIRED).delete()
        return Upload.objects.create(
            team=team,
            created_by=user,
            created_at=now,
            expires_at=now + caps.ttl,
            files=[_entry(source) for source in sources],
            size=incoming.size,
            report=reports.build(sources, planned, parsed, course, incoming.skipped, base),
        )


def checked(course: Course, files: list[tuple[str, bytes]], caps: Caps) -> tuple[list[NoteSource], list[ParsedNote]]:
    """The files as notes of ``course``, parsed, within the caps. ``CourseError`` lists every file's problems,
    with the line where there is one: not a note, not UTF-8, binary, a curated file's mistakes, no card."""
    sources, problems = uploaded_sources(files, course.qualified)
    parsed = []
    for source in sources:
        try:
            note = parse_note(source.text, source.slug, source.curated, source.curated_path)
        except CuratedError as exc:
            problems += str(exc).splitlines()
            continue
        parsed.append(note)
        if not note.cards:
            problems.append(
                _(
                    "%(file)s: gives no card: no sentence has a key term (bold or inline code) to blank, no list "
                    "item defines a term, no table pairs terms and no code block shows its output; write its "
                    "questions in cards/%(stem)s.toml beside it."
                )
                % {"file": source.display_path, "stem": course.unqualified(source.slug)}
            )
    if problems:
        raise CourseError(problems)
    check_caps(course, parsed, caps)
    return sources, parsed


def check_caps(course: Course, parsed: list[ParsedNote], caps: Caps) -> None:
    """The course after this import: within the notes and cards caps (``CourseError`` otherwise).

    A course's cards are what its notes give (an uploaded note counts what it gives now, output cards
    waiting for the sandbox included) and its active drill cards.
    """
    slugs = {note.slug for note in parsed}
    others = Note.objects.filter(course=course).exclude(slug__in=slugs) if course.pk else Note.objects.none()
    notes = len(slugs) + others.count()
    if notes > caps.notes:
        raise CourseError(
            _("The course would have %(n)d notes, over this site's limit of %(cap)d a course.")
            % {"n": notes, "cap": caps.notes}
        )
    waiting = Q(output_check__in_note=True, output_check__state=OutputCheck.State.PENDING)  # for the sandbox
    kept = Q(note__in=others, kind__in=IMPORTED_KINDS) & (Q(active=True) | waiting)
    drills = Q(note__course=course, kind=Card.Kind.DRILL, active=True)
    stored = Card.objects.filter(kept | drills).count() if course.pk else 0
    cards = stored + sum(len(note.cards) for note in parsed)
    if cards > caps.cards:
        raise CourseError(
            _("The course would have %(n)d cards, over this site's limit of %(cap)d a course.")
            % {"n": cards, "cap": caps.cards}
        )


def _entry(source: NoteSource) -> dict[str, Any]:
    return {
        "name": str(source.path),
        "text": source.text,
        "cards_name": source.curated_path,
        "cards_text": source.curated,
    }


def _files(upload: Upload) -> list[tuple[str, bytes]]:
    """The kept notes as uploaded files again (their text was checked when it was kept)."""
    files = []
    for entry in upload.files:
        files.append((entry["name"], entry["text"].encode()))
        if entry.get("cards_text") is not None:
            files.append((entry["cards_name"], entry["cards_text"].encode()))
    return files


# ------------------------------------------------------------------------------ 3. the confirmation


@dataclass(frozen=True)
class Confirmed:
    course: Course
    reports: list[NoteReport]
    verified: list[str]  # the verifiers' lines ("output cards: 0 verified ..., 3 waiting for a sandbox run")


class _Replanned(Exception):
    """Raised inside the confirmation's transaction to roll it back; carries the report of the new plan."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.report = report


def confirm(upload: Upload, user: AbstractBaseUser, caps: Caps | None = None) -> Confirmed:
    """Import the previewed notes into the team's course (made now if this is its first upload).

    Steps: 1. lock the team's row (confirmations and ``import_course`` of one team take turns) and the
    upload's; 2. refuse an upload confirmed, discarded or expired; 3. check the notes and caps again and
    import them, with the course's files, in one transaction; 4. compare what the import did with the plan
    the editor saw: different, everything is rolled back, the upload keeps the new report and
    ``CourseChanged`` asks the editor to read it again.
    """
    caps = caps or Caps.from_settings()
    try:
        with transaction.atomic():
            team = Team.objects.select_for_update().get(pk=upload.team_id)
            locked = Upload.objects.select_for_update().get(pk=upload.pk)
            _check_confirmable(locked)
            course = team.course or create_course(team)
            sources, parsed = checked(course, _files(locked), caps)
            skipped, base = locked.report.get("skipped", []), reports.base_of(sources)
            verified: list[str] = []
            try:
                if base != locked.report.get("base"):
                    planned = import_notes(sources, course=course, dry_run=True, parsed=parsed)
                    raise _Replanned(reports.build(sources, planned, parsed, course, skipped, base))
                done = import_notes(sources, course=course, on_verified=verified.append, parsed=parsed)
            except NoteFileError as exc:
                raise CourseError(str(exc).splitlines()) from None
            if reports.plan_of(done) != locked.report.get("plan"):
                raise _Replanned(reports.build(sources, done, parsed, course, skipped, base))
            write_files(course, sources)
            locked.state, locked.confirmed_by, locked.confirmed_at = Upload.State.CONFIRMED, user, timezone.now()
            locked.save(update_fields=["state", "confirmed_by", "confirmed_at"])
    except _Replanned as changed:
        Upload.objects.filter(pk=upload.pk, state=Upload.State.PREVIEW).update(report=changed.report)
        raise CourseChanged(
            _(
                "The course changed since this preview (another upload was imported meanwhile): nothing was "
                "imported. Read the new report and confirm again."
            )
        ) from None
    return Confirmed(course, done, verified)


def _check_confirmable(upload: Upload) -> None:
    if upload.state == Upload.State.CONFIRMED:
        raise CourseError(_("This upload was already imported."))
    if upload.state == Upload.State.DISCARDED:
        raise CourseError(_("This upload was discarded; upload the notes again."))
    if upload.is_expired():
        raise CourseError(_("This preview expired before it was confirmed; upload the notes again."))


def discard(upload: Upload) -> None:
    """Drop a preview the editor does not want (its files go at once; the row stays for the hourly cap)."""
    Upload.objects.filter(pk=upload.pk, state=Upload.State.PREVIEW).update(state=Upload.State.DISCARDED, files=[])


def write_files(course: Course, sources: list[NoteSource]) -> None:
    """Keep each note's files as written (``<note>.md``, ``cards/<note>.toml``) for the course's export; a
    note now imported without a cards file loses the one it had, as its cards did."""
    for source in sources:
        slug = course.unqualified(source.slug)
        CourseFile.objects.update_or_create(course=course, path=f"{slug}.md", defaults={"text": source.text})
        cards = f"cards/{slug}.toml"
        if source.curated is None:
            CourseFile.objects.filter(course=course, path=cards).delete()
        else:
            CourseFile.objects.update_or_create(course=course, path=cards, defaults={"text": source.curated})


def kinds_of(course: Course) -> dict[str, int]:
    """Active cards of the course by kind (one grouped query)."""
    rows = Card.objects.filter(note__course=course, active=True).values("kind").annotate(n=Count("pk")).order_by()
    return {row["kind"]: row["n"] for row in rows}
