"""Print the card audit: counts and back lengths per note and kind, oversized and generic cards,
headings without a card, and output cards the notes check flags (see cards.audit).

It lives in ``outputs``, which is built on ``cards``: the cards part comes from ``cards.audit``, the
output cards' part from the notes check's stored runs (``manage.py check_notes`` runs them).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from cards.audit import BACK_PROSE_LIMIT, FRONT_PROSE_LIMIT, Audit, audit_cards
from outputs import runs


def add_output_cards(audit: Audit) -> Audit:
    """Active output cards the notes check flags (an error finding), and those it has not run yet."""
    report = runs.check_report()
    audit.output_cards = report["checked"] + report["unchecked"]
    audit.output_unchecked = report["unchecked"]
    audit.output_flagged = [
        f"{row['note']} › {row['heading']}: {row['problem']}"
        for row in report["findings"]
        if row["severity"] == "error"
    ]
    return audit


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
        missing = sum(len(paths) for paths in audit.uncovered.values())
        out(f"\nheadings with substance: {sum(audit.headings.values())}, without a card: {missing}")
        for slug, paths in audit.uncovered.items():
            for path in paths:
                out(f"  {slug}: {path}")
        out(
            f"\noutput cards: {audit.output_cards} active, {len(audit.output_flagged)} flagged by check_notes, "
            f"{audit.output_unchecked} not checked yet (run manage.py check_notes)"
        )
        for line in audit.output_flagged:
            out(f"  {line}")
