"""``python -m cards.ingest.coverage NOTE.md...``: what cards a note gives, before importing it.

For each note: the cards by kind, the curated file's mistakes (if any), and the headings whose
section teaches something yet reaches no card. Writers of ``cards/<note>.toml`` run it after each
edit; it needs no database.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from cards.ingest.curated import CuratedError, curated_file_path, substantive_headings
from cards.ingest.parser import parse_note
from cards.ingest.slugs import note_slug


def report(note: Path) -> tuple[bool, list[str]]:
    """(ok, lines): ok is False when the note or its curated file cannot be read or has mistakes."""
    curated_path = curated_file_path(note)
    try:
        text = note.read_text(encoding="utf-8")
        curated = curated_path.read_text(encoding="utf-8") if curated_path.is_file() else None
    except (OSError, UnicodeDecodeError) as exc:
        return False, [f"{note}: cannot be read ({exc})."]
    try:
        parsed = parse_note(text, note_slug(note), curated, str(curated_path))
    except CuratedError as exc:
        return False, [f"{note}: the curated file has mistakes:", *str(exc).splitlines()]
    kinds = Counter(card.kind for card in parsed.cards)
    covered = {card.heading_path for card in parsed.cards}
    uncovered = [p for p in substantive_headings(text) if p not in covered]
    source = f"curated ({curated_path})" if curated is not None else "cut from the note (no curated file)"
    lines = [
        f"{note}: {len(parsed.cards)} cards, " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())),
        f"  questions: {source}",
        f"  headings with substance and no card: {len(uncovered)}",
        *[f"    - {path}" for path in uncovered],
    ]
    return True, lines


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write(__doc__.strip().splitlines()[0] + "\n")
        return 2
    ok = True
    for name in argv:
        good, lines = report(Path(name))
        ok &= good
        sys.stdout.write("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
