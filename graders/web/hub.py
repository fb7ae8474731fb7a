"""The drill hub's rows and filters: every active drill with the learner's own standing on it.

A constant number of queries whatever the number of drills: the drills with their notes and their fitted
difficulty (one), the learner's facts (``graders.rating.progress``: three), the learner's own fitted skill (one,
only when a listed drill's fit is shown: ``LearnerSkill``, never anyone else's), and the courses they edit (one,
only when a listed drill's label disagrees with its learners, and not for staff). Filtering happens on the
built rows, since the status is derived and the list is a few hundred drills at most.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import date
from functools import lru_cache

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ObjectDoesNotExist
from django.utils.html import strip_tags

from cards import extensions
from cards.rendering import render_markdown
from graders.models import Difficulty, Drill, DrillDifficulty, LearnerSkill
from graders.rating.progress import DrillFacts, DrillStatus, drill_status, learner_facts
from jobs.labels import STATUS_LABELS

_PARAGRAPH = re.compile(r"^\s*<p>(.*)</p>\s*$", re.DOTALL)
QUERY_CHARS = 200


@lru_cache(maxsize=1024)
def title_html(title: str) -> str:
    """A drill title's markdown as inline HTML (sanitised by ``render_markdown``): no raw ``**`` on the page."""
    html = render_markdown(title).strip()
    found = _PARAGRAPH.match(html)
    return found.group(1) if found else html


@dataclass(frozen=True)
class HubRow:
    drill: Drill
    title_html: str
    status: DrillStatus
    facts: DrillFacts
    edits: bool = False  # staff, or an owner or editor of the drill's course: a disagreeing label is named
    skill: LearnerSkill | None = None  # the learner's own, from the same fit, once it rests on enough attempts

    @property
    def fitted(self) -> DrillDifficulty | None:
        """The last refit's row, once the drill has enough first attempts to show it (read with the drill)."""
        try:
            row: DrillDifficulty = self.drill.fitted_difficulty
        except ObjectDoesNotExist:
            return None
        return row if row.shown else None

    @property
    def first_try_percent(self) -> int | None:
        """The learner's chance, in whole percent, that a first attempt at this drill is accepted: only before
        their first attempt (after it, the first try is history), and only where both fits are shown."""
        fitted = self.fitted
        if self.skill is None or fitted is None or self.facts.attempts:
            return None
        return round(100 * self.skill.first_try_chance(fitted))

    @property
    def best_verdict_label(self) -> str:
        return str(STATUS_LABELS[self.facts.best_verdict]) if self.facts.best_verdict else ""

    @property
    def search_text(self) -> str:
        drill = self.drill
        parts = [
            drill.slug,
            strip_tags(self.title_html),
            drill.prompt_en,
            drill.prompt_zh,  # the hub is searched in Chinese as much as in English ("张量")
            drill.card.note.title,
            *drill.tags,
        ]
        return " ".join(parts).lower()


@dataclass(frozen=True)
class HubFilters:
    status: str = ""
    tag: str = ""
    difficulty: str = ""
    note: str = ""
    track: str = ""
    query: str = ""
    course: str = ""  # a course's slug: only its drills (the hub lists only the courses the learner may read)

    @classmethod
    def from_query(cls, params: dict[str, str]) -> HubFilters:
        """Unknown values are ignored rather than refused: a stale bookmark still lists drills."""
        status = params.get("status", "")
        difficulty = params.get("difficulty", "")
        return cls(
            status=status if status in DrillStatus._value2member_map_ else "",
            tag=params.get("tag", "")[:60],
            difficulty=difficulty if difficulty in Difficulty.values else "",
            note=params.get("note", "")[:120],
            track=params.get("track", "")[:60],
            query=params.get("q", "").strip()[:QUERY_CHARS],
            course=params.get("course", "")[:60],
        )

    @property
    def active(self) -> bool:
        return any((self.status, self.tag, self.difficulty, self.note, self.track, self.query, self.course))

    def keeps(self, row: HubRow) -> bool:
        drill = row.drill
        return (
            (not self.status or row.status == self.status)
            and (not self.tag or self.tag in drill.tags)
            and (not self.difficulty or drill.difficulty == self.difficulty)
            and (not self.note or drill.card.note.slug == self.note)
            and (not self.track or drill.track == self.track)
            and (not self.course or _course_slug(drill) == self.course)
            and (not self.query or all(word in row.search_text for word in self.query.lower().split()))
        )


@dataclass(frozen=True)
class Hub:
    rows: list[HubRow]
    total: int
    counts: dict[str, int] = field(default_factory=dict)  # per status, over all drills
    tags: list[str] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (slug, title)
    tracks: list[str] = field(default_factory=list)
    courses: list[tuple[str, str]] = field(default_factory=list)  # (slug, title) of the courses with drills here
    skill: LearnerSkill | None = None  # the learner's own fitted skill, when shown


def hub_rows(user: AbstractBaseUser, today: date) -> list[HubRow]:
    """Every active drill with the learner's status, in note then card order."""
    drills = Drill.objects.active().visible_to(user).select_related("card__note__course", "fitted_difficulty")
    drills = drills.order_by("card__note__title", "card__position", "pk")
    facts = learner_facts(user)
    drills = list(drills)
    skill = LearnerSkill.shown_for(user) if any(_shown(drill) for drill in drills) else None
    rows = []
    for drill in drills:
        drill_facts = facts.get(drill.pk, DrillFacts())
        status = drill_status(drill_facts, today)
        rows.append(HubRow(drill, title_html(drill.title), status, drill_facts, skill=skill))
    return _mark_edits(user, rows)


def _shown(drill: Drill) -> bool:
    try:
        return bool(drill.fitted_difficulty.shown)
    except ObjectDoesNotExist:
        return False


def _mark_edits(user: AbstractBaseUser, rows: list[HubRow]) -> list[HubRow]:
    """Mark the rows of the courses the user edits (all, for staff), where it matters: only a disagreeing label
    reads differently for an editor, so the courses they edit are asked for (one query) only when one is listed."""
    if not any(row.fitted is not None and row.fitted.disagreement for row in rows):
        return rows
    if getattr(user, "is_staff", False):
        return [replace(row, edits=True) for row in rows]
    edited = {found["course_id"] for query in extensions.course_editor_queries(user.pk) for found in query}
    return [replace(row, edits=row.drill.card.note.course_id in edited) for row in rows]


def build_hub(user: AbstractBaseUser, today: date, filters: HubFilters) -> Hub:
    rows = hub_rows(user, today)
    kept = [row for row in rows if filters.keeps(row)]
    if filters.track:
        kept.sort(key=lambda row: (row.drill.position, row.drill.slug))
    counts = {status.value: 0 for status in DrillStatus}
    for row in rows:
        counts[row.status.value] += 1
    notes = {row.drill.card.note.slug: row.drill.card.note.title for row in rows}
    return Hub(
        rows=kept,
        total=len(rows),
        counts=counts,
        tags=sorted({tag for row in rows for tag in row.drill.tags}),
        notes=sorted(notes.items(), key=lambda item: item[1]),
        tracks=sorted({row.drill.track for row in rows if row.drill.track}),
        courses=_courses(rows),
        skill=rows[0].skill if rows else None,
    )


def _course_slug(drill: Drill) -> str:
    course = drill.card.note.course
    return course.slug if course is not None else ""


def _courses(rows: list[HubRow]) -> list[tuple[str, str]]:
    """The courses the listed drills come from (read from the rows: no query), the public ones first."""
    found = {note.course for note in (row.drill.card.note for row in rows) if note.course is not None}
    return [(course.slug, course.title) for course in sorted(found, key=lambda c: (not c.public, c.title, c.pk))]
