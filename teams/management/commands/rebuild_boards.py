"""Recompute the teams rollup and the Redis leaderboards from the source of truth.

The boards are a cache of ReviewLog and Submission. Run this after restoring a database, after
flushing Redis, after changing the XP rules in teams/xp.py, or whenever a board looks wrong; the
weekly (in fact daily) beat task runs the same code.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from teams.services import rebuild_all


class Command(BaseCommand):
    help = (
        "Recompute every learner's daily XP rollup from ReviewLog and Submission, then drop and rewrite "
        "the Redis leaderboards. With --dry-run, only report how many stored days differ."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Compute and compare, but write nothing.")
        parser.add_argument("--user", type=int, action="append", dest="users", help="Only this user id (repeatable).")

    def handle(self, *args: Any, dry_run: bool, users: list[int] | None, verbosity: int, **options: Any) -> None:
        report = rebuild_all(dry_run=dry_run, user_ids=users)
        if verbosity >= 1:
            verb = "would change" if dry_run else "changed"
            self.stdout.write(
                f"{report['learners']} learners, {verb} {report['days_changed']} stored learner day(s), "
                f"{report['redis_keys']} Redis board keys written."
            )
