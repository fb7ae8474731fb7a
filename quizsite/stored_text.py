"""Stored English, shown in the learner's language (docs/i18n.md).

The pure cores (``graders.drills``, ``graders.sandbox``, ``cards.scheduling``) speak English and import
nothing from Django; what they say is stored as they said it (a verdict, a fit's outcome). A
``Catalogue`` turns such text into the active language where it is shown: each shape the core writes is
listed once as its English text with ``%(name)s`` slots, marked with ``gettext_noop`` where it is listed
(so makemessages puts it in the catalogue). The English text is also the pattern: a line that matches it
whole becomes its translation, the slots filled from the line (slots named in ``nested`` are translated
the same way first). A line that matches no shape stays as it was, English and exact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.utils.translation import gettext

_SLOT = re.compile(r"%\((\w+)\)s")
_DEPTH = 4  # nested slots go this deep at most (an inner message inside a test's line, and its phrases)


@dataclass(frozen=True)
class Shape:
    """One English message shape; ``nested`` names the slots whose text is itself translated."""

    source: str
    nested: tuple[str, ...] = ()
    articles: tuple[str, ...] = ()  # slots that begin with an English "a"/"an", dropped in a translation


def shapes(*sources: str | tuple[str, tuple[str, ...]] | Shape) -> tuple[Shape, ...]:
    """Shapes from plain sources, (source, nested) pairs, or ``Shape`` values, in order."""
    return tuple(s if isinstance(s, Shape) else Shape(s) if isinstance(s, str) else Shape(*s) for s in sources)


class Catalogue:
    """Shapes, most specific first (the first that matches a whole line wins), and each slot's pattern:
    a slot that sits beside another needs one; every other slot takes the shortest text that fits."""

    def __init__(self, listed: Iterable[Shape], slot_patterns: Mapping[str, str] | None = None) -> None:
        self.shapes = tuple(listed)
        slots = dict(slot_patterns or {})
        self._patterns = [(shape, self._compile(shape.source, slots)) for shape in self.shapes]

    @staticmethod
    def _compile(source: str, slots: Mapping[str, str]) -> re.Pattern[str]:
        parts = _SLOT.split(source)
        regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>{slots.get(p, '.*?')})" for i, p in enumerate(parts))
        return re.compile(f"^{regex}$", re.DOTALL)

    def translate_line(self, line: str, depth: int = 0) -> str:
        """One line in the active language, or the line itself when no shape matches it whole."""
        if depth > _DEPTH or not line:
            return line
        for shape, pattern in self._patterns:
            found = pattern.match(line)
            if found is None:
                continue
            slots = found.groupdict()
            for name in shape.nested:
                slots[name] = self.translate_line(slots[name], depth + 1)
            translated = gettext(shape.source)
            if translated != shape.source:
                for name in shape.articles:
                    slots[name] = re.sub(r"^an? ", "", slots[name])
            return translated % slots
        return line

    def translate(self, text: object) -> str:
        """A whole stored text, line by line."""
        return "\n".join(self.translate_line(line) for line in str(text).split("\n"))
