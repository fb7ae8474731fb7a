"""``manage.py export_course [--team SLUG] OUT``: write a course out as a folder ``import_course`` reads back.

So a team's course can move into git (or to another site) and be reviewed like code: its notes as they were
uploaded, their curated cards files, its drills as their stored TOML (naming each drill's own slug) and, for
the bundled course, the learning order. An export never overwrites: OUT must be missing or empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from cards.models import BUNDLED_COURSE, Course
from courses.folders import FolderError, team_course, write_folder
from teams.models import Team


class Command(BaseCommand):
    help = (
        "Write a team's course (or without --team the bundled course) into the folder OUT, in the layout "
        "import_course reads: notes, cards/<note>.toml, drills/<note>/<slug>.toml."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, metavar="OUT", help="A folder that does not exist yet, or is empty.")
        parser.add_argument("--team", metavar="SLUG", help="The team whose course to export (default: the bundled).")

    def handle(self, *args: Any, out: Path, team: str | None, verbosity: int, **options: Any) -> None:
        if team is None:
            course = Course.objects.filter(slug=BUNDLED_COURSE).first()
        else:
            owner = Team.objects.select_related("course").filter(slug=team).first()
            if owner is None:
                raise CommandError(f"no team with the slug {team!r}")
            course = team_course(owner)
        if course is None:
            raise CommandError("that course has nothing imported yet: nothing to export")
        try:
            written = write_folder(course, out)
        except FolderError as exc:
            raise CommandError(str(exc)) from None
        if verbosity >= 1:
            self.stdout.write(self.style.SUCCESS(f"course {course.slug!r}: {len(written)} files written to {out}"))
