"""What an edit did to a note's own text, section by section, for the import report. Pure: no Django.

A card count alone hides edits that give no card (a paragraph reworded, a heading renamed whose
cards are all found again), and an author re-importing a note wants to see those too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher

from cards.ingest.markdown import normalize_newlines, split_front_matter
from cards.ingest.sections import PATH_SEPARATOR, Section, split_sections


@dataclass
class NoteEdits:
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (old heading, new heading)
    edited: list[str] = field(default_factory=list)  # heading paths whose own text changed
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per kind of edit, for the import report."""
        found = []
        if self.renamed:
            found.append("heading renamed: " + "; ".join(f"{old!r} -> {new!r}" for old, new in self.renamed))
        for label, paths in (("text edited", self.edited), ("section added", self.added)):
            if paths:
                found.append(f"{label}: " + "; ".join(repr(p) for p in paths))
        if self.removed:
            found.append("section removed: " + "; ".join(repr(p) for p in self.removed))
        return found


def _sections(text: str) -> list[Section]:
    return split_sections(split_front_matter(normalize_newlines(text))[1])[0]


def _path(section: Section) -> str:
    return PATH_SEPARATOR.join(h.text for h in section.path) or (section.heading.text if section.heading else "")


def _heading(section: Section) -> str:
    return section.heading.text if section.heading else ""


def note_edits(old_text: str, new_text: str) -> NoteEdits:
    """Headings renamed, sections whose text changed, sections added and removed.

    Sections are aligned by their headings in order; in a run of headings replaced by others, a section
    whose text is at least half like a new one's at the same level was renamed (and its text is compared
    too), and the rest of the run was removed and added.
    """
    old, new = _sections(old_text), _sections(new_text)
    edits = NoteEdits()
    matcher = SequenceMatcher(a=[_heading(s) for s in old], b=[_heading(s) for s in new], autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            edits.edited += [
                _path(after) for before, after in zip(old[a0:a1], new[b0:b1], strict=True) if before.body != after.body
            ]
            continue
        added = list(new[b0:b1])
        for before in old[a0:a1]:
            after = _most_alike(before, added)
            if after is None:
                edits.removed.append(_path(before))
                continue
            added.remove(after)
            edits.renamed.append((_heading(before), _heading(after)))
            if before.body != after.body:
                edits.edited.append(_path(after))
        edits.added += [_path(s) for s in added]
    return edits


def _most_alike(section: Section, candidates: list[Section]) -> Section | None:
    """The candidate at the same level whose text is most like the section's (at least half alike): its new name."""
    scored = [
        (SequenceMatcher(a=section.body, b=other.body, autojunk=False).ratio(), -index, other)
        for index, other in enumerate(candidates)
        if _level(other) == _level(section)
    ]
    best = max(scored, default=None, key=lambda item: item[:2])
    return best[2] if best is not None and best[0] >= 0.5 else None


def _level(section: Section) -> int:
    return section.heading.level if section.heading else 0
