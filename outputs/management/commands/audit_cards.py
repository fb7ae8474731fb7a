"""Print the card audit: counts and back lengths per note and kind, oversized and generic cards,
headings without a card, and output cards the notes check flags (see cards.audit).

It lives in ``outputs``, which is built on ``cards``: the cards part comes from ``cards.audit``, the
output cards' part from the notes check's stored runs (``manage.py check_notes`` runs them).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from cards.audit import BACK_PROSE_LIMIT, FRONT_PROSE_LIMIT, Audit, audit_cards
from cards.models import Card
from outputs import runs, snippets, verify
from outputs.models import SnippetRun


def add_output_cards(audit: Audit) -> Audit:
    """Output cards from the notes check's stored runs, judged here again rather than trusted from the cards'
    flags: an active card is verified only when its current code has a final run that qualifies and its back
    is what that run printed; any other active card is flagged."""
    report = runs.check_report()
    audit.output_kept_out = sum(1 for row in report["findings"] if row["severity"] == "error")
    audit.output_unchecked = report["unchecked"]
    cards = (
        Card.objects.active().filter(kind=Card.Kind.OUTPUT).select_related("note").order_by("note__slug", "position")
    )
    found = {(run.card_id, run.content_hash): run for run in SnippetRun.objects.filter(card__in=cards)}
    for card in cards:
        audit.output_cards += 1
        problem = _unverified(card, found)
        if problem:
            audit.output_flagged.append(f"{card.note.path} › {card.heading_path}: {problem}")
        else:
            audit.output_verified += 1
    return audit


def _unverified(card: Card, found: dict[tuple[int, str], SnippetRun]) -> str:
    snippet = verify.snippet_for(card)
    if snippet is None:
        return "no code or no output block"
    run = found.get((card.pk, snippet.content_hash))
    if run is None or not run.is_final:
        return "no sandbox run of its code"
    code = snippet.code
    judged = snippets.verdict(code, run.outcome, run.output, run.error, run.context_outcome, run.context_output)
    if not judged.qualifies:
        return f"{judged.problem}: {judged.detail}"
    if card.back != verify.fenced(judged.output):
        return "its back is not what the sandbox printed"
    return ""


class Command(BaseCommand):
    help = "Audits the active cards against the one-card-one-fact rules; run check_notes first for output cards."

    def handle(self, *args: Any, **options: Any) -> None:
        audit = add_output_cards(audit_cards())
        out = self.stdout.write
        out(
            f"{'note':<28} {'kind':<8} {'cards':>5} {'back med':>8} {'back max':>8} "
            f"{'front>' + str(FRONT_PROSE_LIMIT):>9} {'back>' + str(BACK_PROSE_LIMIT):>8} {'generic':>7}"
        )
        for r in audit.rows:
            out(
                f"{r.note:<28} {r.kind:<8} {r.cards:>5} {r.back_median:>8} {r.back_max:>8} "
                f"{r.long_fronts:>9} {r.long_backs:>8} {r.generic_fronts:>7}"
            )
        total = sum(r.cards for r in audit.rows)
        out(
            f"{'total':<28} {'':<8} {total:>5} {'':>8} {'':>8} {sum(r.long_fronts for r in audit.rows):>9} "
            f"{sum(r.long_backs for r in audit.rows):>8} {sum(r.generic_fronts for r in audit.rows):>7}"
        )
        out(f"\nfronts that ask two questions: {len(audit.two_questions)}")
        for line in audit.two_questions:
            out(f"  {line}")
        out(f"possible near-duplicates (one fact carded twice): {len(audit.duplicates)} pairs")
        for line in audit.duplicates:
            out(f"  {line}")
        out(f"cards whose question shows their answer: {len(audit.own_answers)}")
        for line in audit.own_answers:
            out(f"  {line}")
        out(f"cards whose question spells their one-name answer: {len(audit.named_answers)}")
        for line in audit.named_answers:
            out(f"  {line}")
        out(f"cards with half-width marks in Chinese sentences: {len(audit.half_width)}")
        for line in audit.half_width:
            out(f"  {line}")
        for title, problems in audit.checks.items():
            out(f"{title}: {len(problems)}")
            for line in problems:
                out(f"  {line}")
        missing = sum(len(paths) for paths in audit.uncovered.values())
        out(f"\nheadings with substance: {sum(audit.headings.values())}, without a card: {missing}")
        for slug, paths in audit.uncovered.items():
            for path in paths:
                out(f"  {slug}: {path}")
        out(
            f"\noutput cards: {audit.output_cards} active, {audit.output_verified} verified by the sandbox, "
            f"{len(audit.output_flagged)} flagged; {audit.output_kept_out} kept out of review, "
            f"{audit.output_unchecked} not checked yet (manage.py check_notes)"
        )
        for line in audit.output_flagged:
            out(f"  {line}")
