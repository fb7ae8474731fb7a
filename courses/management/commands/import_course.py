"""``manage.py import_course FOLDER [--team SLUG] [--dry-run]``: import a course kept as a folder.

A course can live in git and be reviewed like code: its notes, their curated cards files, its drills and
(the bundled course) its learning order, in the repository's own layout (``courses.folders``). Without
``--team`` the folder is the bundled course (``make run`` imports ``notes/`` this way); with it, the team's
own course, made on its first import. Safe to run again after every edit: what ``import_notes`` and
``import_drills`` keep, it keeps (stable keys, cards retired and never deleted, history kept). Nothing is
written when a file has a mistake; ``--dry-run`` reports exactly what a real run would do.

It lives in the courses app, not in cards: it names teams and drills, which cards must never import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from cards.importing import NoteReport
from courses.folders import FolderError, import_folder
from teams.models import Team


class Command(BaseCommand):
    help = (
        "Import a course folder (FOLDER/*.md notes, FOLDER/cards/<note>.toml, FOLDER/drills/<note>/*.toml and, "
        "for the bundled course, FOLDER/learning-order.toml) into a team's course, or without --team into the "
        "bundled course, updating cards in place and retiring those whose source is gone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path, metavar="FOLDER", help="The course's folder, e.g. notes/.")
        parser.add_argument("--team", metavar="SLUG", help="The team whose course it is (default: the bundled course).")
        parser.add_argument("--dry-run", action="store_true", help="Report what would change and write nothing.")

    def handle(self, *args: Any, folder: Path, team: str | None, dry_run: bool, verbosity: int, **options: Any) -> None:
        owner = None
        if team is not None:
            owner = Team.objects.filter(slug=team).first()
            if owner is None:
                raise CommandError(f"no team with the slug {team!r}")

        def progress(report: NoteReport) -> None:
            if verbosity >= 1:
                self.stdout.write(
                    f"{report.path}: {len(report.created)} created, {len(report.updated)} updated, "
                    f"{len(report.moved)} moved, {report.unchanged} unchanged, {len(report.retired)} retired"
                )

        try:
            done = import_folder(folder, owner, dry_run=dry_run, on_note=progress)
        except FolderError as exc:
            raise CommandError(f"Nothing was imported:\n{exc}") from None
        if verbosity < 1:
            return
        for warning in done.warnings + (done.drills.warnings if done.drills else []):
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        for line in done.verified:
            self.stdout.write(line)
        prefix = "Dry run, nothing written: " if dry_run else ""
        changes = sum(
            len(r.created) + len(r.updated) + len(r.moved) + len(r.reactivated) + len(r.retired) for r in done.notes
        )
        drills = done.drills
        drill_line = (
            f"; drills: {len(drills.created)} created, {len(drills.updated)} updated, "
            f"{len(drills.unchanged)} unchanged, {len(drills.retired)} retired"
            if drills
            else ""
        )
        order = (
            f"; learning order: {done.order.created + done.order.updated + done.order.removed} stage changes"
            if done.order
            else ""
        )
        summary = f"{prefix}course {done.course.slug!r}: {len(done.notes)} notes, {changes} card changes"
        self.stdout.write(self.style.SUCCESS(f"{summary}{drill_line}{order}."))
