"""``manage.py export_anki OUTPUT``: write decks as an Anki package (``.apkg``).

Why a command as well as the page: an operator can hand a whole deck to learners (or back it up)
without a browser, and a learner's schedule can be exported for them with ``--user``.
"""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from cards import anki
from cards.models import Note


class Command(BaseCommand):
    help = (
        "Write every deck (or the decks named with --deck) as an Anki .apkg file; with --user, each card that "
        "learner has reviewed carries their interval (their scheduler's: SM-2 or FSRS), due day and ease."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("output", help="The .apkg file to write.")
        parser.add_argument("--deck", action="append", default=[], metavar="SLUG", help="A note slug (repeatable).")
        parser.add_argument("--user", default="", metavar="USERNAME", help="Include this learner's schedule.")

    def handle(self, *args: Any, output: str, deck: list[str], user: str, verbosity: int, **options: Any) -> None:
        notes = list(Note.objects.filter(slug__in=deck) if deck else Note.objects.all())
        if missing := set(deck) - {note.slug for note in notes}:
            raise CommandError(f"No deck with the slug {', '.join(sorted(missing))}.")
        learner = None
        if user:
            learner = get_user_model().objects.filter(username=user).first()
            if learner is None:
                raise CommandError(f"No user named {user!r}.")
        package, summary = anki.build_package(notes, schedule_for=learner)
        with Path(output).open("wb") as fh:
            anki.write_apkg(package, fh)
        if verbosity >= 1:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Wrote {output}: {summary.decks} decks, {summary.cards} cards, "
                    f"{summary.scheduled} with a schedule."
                )
            )
