"""``manage.py import_notes PATH...``: turn markdown notes into cards, safely and repeatably.

Notes change over time and learners' review history hangs off card rows, so importing is not a
one-off load: it must be safe to run again after every edit. Cards are matched by a stable key
and updated in place, cards whose source disappeared are retired rather than deleted, and an
unchanged note costs two reads and no writes. Every file is checked before anything is written.
"""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from cards.importing import NoteFileError, NoteReport, import_notes, load_sources
from cards.ingest.curated import curated_file_path

_PREVIEW = 70
_BAR_WIDTH = 20


def progress_bar(done: int, total: int) -> str:
    """``[#########-----------] 3/7``: where a long import of many notes has got to."""
    filled = _BAR_WIDTH * done // max(total, 1)
    return f"[{'#' * filled}{'-' * (_BAR_WIDTH - filled)}] {done}/{total}"


class Command(BaseCommand):
    help = (
        "Import markdown notes (files, or folders whose *.md files are read without recursing) as review "
        "cards, updating edited cards in place and retiring cards whose source section is gone."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH", help="A markdown file or a folder of them.")
        parser.add_argument("--dry-run", action="store_true", help="Report what would change without writing anything.")

    def handle(self, *args: Any, paths: list[str], dry_run: bool, verbosity: int, **options: Any) -> None:
        try:
            sources, warnings = load_sources(paths)
        except NoteFileError as exc:
            raise CommandError(f"Nothing was imported:\n{exc}") from exc
        for warning in warnings:
            if verbosity >= 1:
                self.stderr.write(self.style.WARNING(warning))
        done = 0

        def progress(report: NoteReport) -> None:
            nonlocal done
            done += 1
            self._report(report, verbosity, dry_run, f"{progress_bar(done, len(sources))} ")

        try:
            reports = import_notes(
                sources, dry_run=dry_run, on_note=progress, on_verified=self.stdout.write if verbosity else None
            )
        except NoteFileError as exc:
            raise CommandError(f"Nothing was imported:\n{exc}") from exc
        if verbosity >= 1:
            total = sum(
                len(r.created) + len(r.updated) + len(r.moved) + len(r.reactivated) + len(r.retired) for r in reports
            )
            prefix = "Dry run, nothing written: " if dry_run else ""
            self.stdout.write(self.style.SUCCESS(f"{prefix}{len(reports)} notes, {total} card changes."))

    def _report(self, report: NoteReport, verbosity: int, dry_run: bool, progress: str) -> None:
        if verbosity < 1:
            return
        reactivated = f", {len(report.reactivated)} back in review" if report.reactivated else ""
        mode = " [dry run]" if dry_run else ""
        self.stdout.write(
            f"{progress}{report.path} ({report.slug}){mode}: {len(report.created)} created, "
            f"{len(report.updated)} updated, {len(report.moved)} moved, {report.unchanged} unchanged, "
            f"{len(report.retired)} retired{reactivated}"
        )
        for line in report.text_edits:
            self.stdout.write(f"  note text: {line}")
        for warning in report.warnings:
            self.stdout.write(self.style.WARNING(f"  warning: {warning}"))
        if report.cards == 0:
            self.stdout.write(
                self.style.WARNING(
                    f"  {report.path} yields no cards: no sentence has a key term (bold or inline code) to blank, "
                    "no list item defines a term, no table pairs terms and no code block shows its output. "
                    f"Write the questions in {_curated_hint(report.path)}."
                )
            )
        if verbosity >= 2:
            changes = (("+", report.created), ("~", report.updated), (">", report.moved), ("-", report.retired))
            for label, fronts in changes:
                for front in fronts:
                    self.stdout.write(f"  {label} {' '.join(front.split())[:_PREVIEW]}")


def _curated_hint(note_path: str) -> str:
    return str(curated_file_path(Path(note_path)))
