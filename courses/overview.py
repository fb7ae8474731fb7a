"""What a team's course holds, for its members (web process): the team page's course section, the course page
and the API. Its notes with their cards by kind, and its drills with how many members solved each.

A fixed number of queries whatever the course's size: the notes, their active cards grouped by note and kind,
the drills, the members' graded submissions grouped by drill, the member count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Q

from cards.models import Card, Course, Note
from graders.models import Drill, Submission
from graders.web.hub import title_html
from jobs.status import PENDING, Status
from teams.models import Membership, Team


@dataclass(frozen=True)
class NoteRow:
    note: Note
    name: str  # the slug its author gave it (the course's stored slug less the course's)
    cards: int
    kinds: list[tuple[str, int]]  # (kind label, active cards)


@dataclass(frozen=True)
class DrillRow:
    drill: Drill
    name: str
    title_html: str
    attempted: int  # members with a graded submission
    solved: int  # members with an accepted one

    @property
    def rate(self) -> int | None:
        """Percent of the members who tried it that solved it (``None`` while nobody tried)."""
        return round(100 * self.solved / self.attempted) if self.attempted else None


@dataclass(frozen=True)
class Overview:
    team: Team
    course: Course | None
    can_edit: bool
    members: int = 0
    notes: list[NoteRow] = field(default_factory=list)
    kinds: list[tuple[str, int]] = field(default_factory=list)  # the whole course's active cards by kind
    drills: list[DrillRow] = field(default_factory=list)

    @property
    def cards(self) -> int:
        return sum(n for _, n in self.kinds)


def overview(membership: Membership) -> Overview:
    """The course of the viewer's team (``membership`` was checked by the caller: members only)."""
    team = membership.team
    course = team.course if team.course_id is not None else None
    if course is None:
        return Overview(team, None, membership.can_edit_course)
    notes = list(Note.objects.filter(course=course).order_by("title", "slug"))
    per_note: dict[int, list[tuple[str, int]]] = {}
    totals: dict[str, int] = {}
    cards = Card.objects.filter(note__course=course, active=True).values("note_id", "kind").annotate(n=Count("pk"))
    for row in cards.order_by("note_id", "kind"):
        per_note.setdefault(row["note_id"], []).append((Card.Kind(row["kind"]).label, row["n"]))
        totals[row["kind"]] = totals.get(row["kind"], 0) + row["n"]
    return Overview(
        team=team,
        course=course,
        can_edit=membership.can_edit_course,
        members=team.memberships.count(),
        notes=[
            NoteRow(
                note,
                course.unqualified(note.slug),
                sum(n for _, n in per_note.get(note.pk, [])),
                per_note.get(note.pk, []),
            )
            for note in notes
        ],
        kinds=[(label, totals[value]) for value, label in Card.Kind.choices if totals.get(value)],
        drills=drill_rows(team, course),
    )


def drill_rows(team: Team, course: Course) -> list[DrillRow]:
    """The course's active drills, each with how many of the team's members tried it and solved it."""
    drills = list(
        Drill.objects.active()
        .of_course(course)
        .select_related("card__note")
        .order_by("card__note__title", "card__position", "pk")
    )
    graded = Submission.objects.filter(
        drill__in=drills, kind=Submission.Kind.SUBMIT, user__team_memberships__team=team
    ).exclude(status__in=[*PENDING, Status.INTERNAL_ERROR])
    counts = {
        row["drill_id"]: row
        for row in graded.values("drill_id")
        .annotate(
            attempted=Count("user", distinct=True),
            solved=Count("user", filter=Q(status=Status.ACCEPTED), distinct=True),
        )
        .order_by()
    }
    return [
        DrillRow(
            drill,
            course.unqualified(drill.slug),
            title_html(drill.title),
            counts.get(drill.pk, {}).get("attempted", 0),
            counts.get(drill.pk, {}).get("solved", 0),
        )
        for drill in drills
    ]


def team_section(membership: Membership) -> dict[str, object]:
    """The team page's course section (registered with ``teams.extensions``)."""
    return {"overview": overview(membership), "membership": membership}
