"""The bundled notes' corrections file (``settings.NOTE_CORRECTIONS_FILE``), for the note page.

Read when its modification time changes, not per request: the note page is read often and the file
changes only with a deploy. A missing file means no corrections; a broken one is an error
(``tests/cards/test_corrections.py`` checks the bundled file).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from django.conf import settings

from cards.ingest.corrections import Correction, parse_corrections


def corrections_for(slug: str) -> list[Correction]:
    """The corrections to the note stored under ``slug``, in file order."""
    path = Path(settings.NOTE_CORRECTIONS_FILE)
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        return []
    return [c for c in _load(path, mtime) if c.note == slug]


@lru_cache(maxsize=2)
def _load(path: Path, mtime: int) -> tuple[Correction, ...]:
    return tuple(parse_corrections(path.read_text(encoding="utf-8"), str(path)))
