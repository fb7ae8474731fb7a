"""A drill's accepted solutions, grouped by normalised code, and the team teachers' comments on the groups (issue 41).

Run by the web process (the solutions page, the API, the drill page's part). Who sees what:

- a learner sees the groups once ``graders.rating.reviews.solutions_unlocked`` (solved, gave up or looked at the
  reference); so does a teacher (a team's owner or editor), who then comments for a team they teach; the teachers
  of the team whose course the drill is in (its authors) see them without solving;
- the solutions counted and shown are those of the viewer and the learners who share a team with them, unless the
  drill's ``solutions_public`` is on (then every learner's);
- a comment is its team's: only that team's members read it, on the group whose key it names, now and later;
  its author, while a teacher of that team, edits or deletes it (``edit_comment``, ``delete_comment``).

The drill itself comes from the caller's access helper (``Drill.objects.visible_to``): another team's private drill
is a 404 there, before anything here runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model
from django.db.models import Count, Min, QuerySet

from graders.drills.solution_key import solution_key
from graders.models import Drill, Submission
from graders.rating.reviews import solutions_unlocked
from jobs.status import Status

from .models import COMMENT_MAX_CHARS, Membership, SolutionComment, Team

MAX_GROUPS = 30  # the largest groups; a long tail of one-learner groups says little more


class SolutionError(Exception):
    """A comment or a setting the requester may not make (the caller answers 404: nothing is confirmed)."""


@dataclass
class SolutionGroup:
    key: str
    learners: int  # distinct learners whose accepted code has this key
    code: str  # one of them: the viewer's own when it is theirs, else the first accepted
    mine: bool = False
    reference: bool = False
    comments: list[SolutionComment] = field(default_factory=list)


@dataclass
class SolutionsPage:
    drill: Drill
    open: bool  # False: the solutions stay closed (nothing else below is filled)
    groups: list[SolutionGroup] = field(default_factory=list)
    site_wide: bool = False
    teaching: list[Team] = field(default_factory=list)  # the teams the viewer may comment for
    may_open_site_wide: bool = False

    @property
    def my_comments(self) -> int:
        return sum(len(group.comments) for group in self.groups if group.mine)


def accepted_attempts(drill: Drill) -> QuerySet[Submission]:
    """The drill's keyed accepted attempts (served by submission_solution_idx)."""
    return Submission.objects.filter(drill=drill, status=Status.ACCEPTED, kind=Submission.Kind.SUBMIT).exclude(
        solution_key=""
    )


def teaching_teams(user: Any) -> list[Team]:
    roles = (Membership.Role.OWNER, Membership.Role.EDITOR)
    return list(Team.objects.filter(memberships__user_id=user.pk, memberships__role__in=roles).order_by("name", "pk"))


def may_open_site_wide(user: Any, drill: Drill) -> bool:
    """Staff, or an owner of the team whose course the drill is in (a bundled drill: staff alone)."""
    if user.is_staff:
        return True
    course_id = drill.card.note.course_id
    return (
        course_id is not None
        and Membership.objects.filter(user_id=user.pk, role=Membership.Role.OWNER, team__course_id=course_id).exists()
    )


def opens_for(user: Any, drill: Drill, teaching: list[Team]) -> bool:
    """Solved, gave up or saw the reference; or teaches the team whose course the drill is in (its authors). Any
    learner can make a team and own it, so teaching some team opens nothing by itself."""
    course_id = drill.card.note.course_id
    if course_id is not None and any(team.course_id == course_id for team in teaching):
        return True
    return solutions_unlocked(user, drill)


def _visible_attempts(user: Any, drill: Drill) -> QuerySet[Submission]:
    rows = accepted_attempts(drill)
    if drill.solutions_public:
        return rows
    # The viewer and everyone in a team with them, as one IN list: with an OR of the viewer's own rows the planner
    # left submission_solution_idx for a bitmap scan of the drill's rows (docs/drills.md, "Solutions after solving").
    # order_by(): the models' default orderings would put ORDER BY inside the UNION, which SQLite refuses.
    peers = Membership.objects.filter(team__memberships__user_id=user.pk).order_by().values("user_id")
    viewer = get_user_model().objects.filter(pk=user.pk).order_by().values("pk")
    return rows.filter(user_id__in=peers.union(viewer))


def solutions_page(user: Any, drill: Drill) -> SolutionsPage:
    """Steps: 1. closed unless unlocked or teaching  2. the groups, largest first (one grouped query)  3. each
    group's code  4. the reference's group marked (or added)  5. the comments of the viewer's teams."""
    teaching = teaching_teams(user)
    if not opens_for(user, drill, teaching):
        return SolutionsPage(drill, open=False)
    visible = _visible_attempts(user, drill)
    counted = visible.values("solution_key").annotate(learners=Count("user_id", distinct=True), first=Min("pk"))
    rows = list(counted.order_by("-learners", "first")[:MAX_GROUPS])
    mine = dict(
        accepted_attempts(drill).filter(user_id=user.pk).order_by("pk").values_list("solution_key", "pk")
    )  # the latest accepted attempt per key wins
    shown = {row["solution_key"] for row in rows}
    if set(mine) - shown:  # the viewer's own groups, even when too small for the list
        rows += list(counted.filter(solution_key__in=set(mine) - shown).order_by("-learners", "first"))
    wanted = [row["first"] for row in rows] + list(mine.values())
    codes = dict(Submission.objects.filter(pk__in=wanted).values_list("pk", "code"))
    groups = [
        SolutionGroup(
            key=row["solution_key"],
            learners=row["learners"],
            code=codes[mine.get(row["solution_key"], row["first"])],
            mine=row["solution_key"] in mine,
        )
        for row in rows
    ]
    _mark_reference(groups, drill)
    _attach_comments(groups, user, drill)
    return SolutionsPage(
        drill,
        open=True,
        groups=groups,
        site_wide=drill.solutions_public,
        teaching=teaching,
        may_open_site_wide=may_open_site_wide(user, drill),
    )


def _mark_reference(groups: list[SolutionGroup], drill: Drill) -> None:
    key = solution_key(drill.reference_code)
    for group in groups:
        if group.key == key:
            group.reference = True
            return
    groups.append(SolutionGroup(key=key, learners=0, code=drill.reference_code, reference=True))


def _attach_comments(groups: list[SolutionGroup], user: Any, drill: Drill) -> None:
    by_key = {group.key: group for group in groups}
    comments = (
        SolutionComment.objects.filter(drill=drill, team__memberships__user_id=user.pk, solution_key__in=list(by_key))
        .select_related("team", "author")
        .order_by("created_at", "pk")
    )
    for comment in comments:
        by_key[comment.solution_key].comments.append(comment)


def add_comment(author: Any, drill: Drill, key: str, team_slug: str, text: str) -> SolutionComment:
    """A teacher's comment for one of their teams, on a group that team's learners (or the reference) make up.

    Raises ``SolutionError`` for anything else: a team the author does not teach, a key nobody of the team has.
    """
    text = text.strip()
    if not text or len(text) > COMMENT_MAX_CHARS:
        raise SolutionError("empty or too long")
    teaching = teaching_teams(author)
    team = next((team for team in teaching if team.slug == team_slug), None)
    if team is None:
        raise SolutionError("not a teacher of that team")
    if not opens_for(author, drill, teaching):
        raise SolutionError("the solutions are closed to the author")
    members = Membership.objects.filter(team=team).values("user_id")
    known = key == solution_key(drill.reference_code) or (
        accepted_attempts(drill).filter(solution_key=key, user_id__in=members).exists()
    )
    if not known:
        raise SolutionError("no such group")
    return SolutionComment.objects.create(drill=drill, solution_key=key, team=team, author=author, text=text)


def _own_comment(author: Any, drill: Drill, comment: UUID) -> SolutionComment:
    """The author's own comment on this drill, for a team they still teach; ``SolutionError`` otherwise (another
    teacher's comment, a member's request, a teacher demoted since: the same answer as a comment that is not)."""
    found = (
        SolutionComment.objects.filter(uuid=comment, drill=drill, author_id=author.pk).select_related("team").first()
    )
    if found is None or found.team not in teaching_teams(author):
        raise SolutionError("not the author's comment")
    return found


def edit_comment(author: Any, drill: Drill, comment: UUID, text: str, now: datetime) -> SolutionComment:
    """The author's new text for their comment: every reader of the group sees it from now on, marked edited."""
    text = text.strip()
    if not text or len(text) > COMMENT_MAX_CHARS:
        raise SolutionError("empty or too long")
    found = _own_comment(author, drill, comment)
    found.text, found.edited_at = text, now
    found.save(update_fields=["text", "edited_at"])
    return found


def delete_comment(author: Any, drill: Drill, comment: UUID) -> SolutionComment:
    found = _own_comment(author, drill, comment)
    found.delete()
    return found


def set_site_wide(user: Any, drill: Drill, public: bool) -> None:
    if not may_open_site_wide(user, drill):
        raise SolutionError("not allowed")
    Drill.objects.filter(pk=drill.pk).update(solutions_public=public)
    drill.solutions_public = public


def drill_part(user: Any, drill: Drill) -> dict[str, Any] | None:
    """The drill page's part: a link to the solutions once they are open (with how many teacher comments wait
    on the learner's own group); nothing before."""
    if not solutions_unlocked(user, drill):
        return None
    keys = accepted_attempts(drill).filter(user_id=user.pk).values("solution_key")
    waiting = SolutionComment.objects.filter(
        drill=drill, solution_key__in=keys, team__memberships__user_id=user.pk
    ).count()
    return {"drill": drill, "comments": waiting}
