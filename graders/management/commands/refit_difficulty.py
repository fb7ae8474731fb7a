"""Refit every drill's difficulty from the learners' first attempts now, instead of at beat's nightly run.

Why a command: an author who just relabelled drills, or an operator checking the fit after an import of old
submissions, wants the hub's figures without waiting for the night. ``--dry-run`` fits and reports, writing nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone


class Command(BaseCommand):
    help = "Fit each drill's difficulty and each learner's skill from first attempts, and store the drills' rows."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Fit and report; write nothing.")

    def handle(self, *args: Any, dry_run: bool = False, verbosity: int = 1, **options: Any) -> None:
        from graders.difficulty import refit  # numpy: loaded when the command runs, never by the web process

        done = refit.refit(timezone.now(), dry_run=dry_run)
        if verbosity:
            verb = "would write" if dry_run else "wrote"
            self.stdout.write(
                f"{done.attempts} first attempts by {done.learners} learners: {verb} {done.drills} drills, "
                f"{done.shown} with enough attempts to show, {done.flagged} whose label disagrees"
            )
