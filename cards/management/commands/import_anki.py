"""``manage.py import_anki FILE``: an Anki package or a CSV of front/back pairs becomes a new deck.

Why: decks made in Anki (or in a spreadsheet) can join the shared card pool without retyping. The
file is fully read and checked first (sizes, archive, SQLite schema, every field sanitised); a bad
file writes nothing, and ``--dry-run`` reports what would be imported.
"""

from __future__ import annotations

import hashlib
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from cards import anki


class Command(BaseCommand):
    help = (
        "Import an Anki .apkg file or a CSV file (front, back, optional tags per row) as a new deck in one "
        "transaction; a file that fails any check imports nothing."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("file", help="An .apkg or .csv file.")
        parser.add_argument("--title", default="", help="The new deck's title (default: the Anki deck's name).")
        parser.add_argument("--dry-run", action="store_true", help="Check and count the cards without writing.")

    def handle(self, *args: Any, file: str, title: str, dry_run: bool, verbosity: int, **options: Any) -> None:
        path = Path(file)
        try:
            size = path.stat().st_size
            if size > settings.ANKI_IMPORT_MAX_BYTES:
                raise CommandError(f"{file}: {size} bytes, over the {settings.ANKI_IMPORT_MAX_BYTES} byte limit.")
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"{file}: cannot be read ({exc.strerror or exc}).") from exc
        try:
            parsed = anki.read_upload(path.name, data)
            if not dry_run:
                note = anki.save_deck(
                    parsed, source_name=path.name, content_hash=hashlib.sha256(data).hexdigest(), title=title
                )
        except anki.AnkiImportError as exc:
            raise CommandError(f"Nothing was imported from {file}: {exc}") from exc
        if verbosity >= 1:
            where = "dry run, nothing written" if dry_run else f"deck {note.slug!r}"
            self.stdout.write(
                self.style.SUCCESS(f"{len(parsed.cards)} cards ({parsed.skipped} skipped) from {file}: {where}.")
            )
        if verbosity >= 1 and parsed.drills:
            self.stdout.write(self.style.WARNING(parsed.summary().split("; ")[-1] + "."))
