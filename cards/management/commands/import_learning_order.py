"""``manage.py import_learning_order [FILE]``: load the learning order of new cards (basics first).

The order is data a maintainer edits beside the notes (``notes/learning-order.toml``); this command makes
the stored stages match the file, so the queue (``cards.queueing``) and the deck page follow it. It is
safe to run again: unchanged stages are not written, and a team's own order keeps the stages it lists.
"""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from cards.learning import DEFAULT_FILE, OrderFileError, import_stages, read_order_file


class Command(BaseCommand):
    help = (
        "Load the learning order of new cards (stages of note sections, basics first) from a TOML file, "
        "creating, updating and removing stages to match it."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "file", nargs="?", type=Path, default=DEFAULT_FILE, help="Default: notes/learning-order.toml"
        )
        parser.add_argument("--dry-run", action="store_true", help="Report what would change without writing.")

    def handle(self, *args: Any, file: Path, dry_run: bool, verbosity: int, **options: Any) -> None:
        try:
            specs = read_order_file(file)
        except OrderFileError as error:
            raise CommandError(str(error)) from None
        report = import_stages(specs, dry_run=dry_run)
        if verbosity:
            prefix = "would change (dry run): " if dry_run else ""
            self.stdout.write(
                f"{prefix}learning order: {len(specs)} stages; "
                f"created {report.created}, updated {report.updated}, removed {report.removed}"
            )
