"""A team's learning order: its owners reorder the stages, and the members who follow the team get it.

Runs in the web process (the team page, the decks page, joining and leaving). The team keeps its order
(``Team.learning_order``); what the queue reads is each learner's own copy (``cards.Profile.learning_order``),
written here, so the cards app never asks which teams a learner is in.

A learner in several teams follows one team's order at most, named on their profile
(``Profile.learning_order_source``), because two curricula cannot both decide what comes next, and a
merge of them would be nobody's order. Who that is:

1. Joining a team makes the learner follow it only when nobody chose their order yet (no team, no choice
   of their own). A newcomer gets the team's curriculum from their first card, and joining a second team
   (a study group beside a course) never swaps the order of someone already learning by another's, the way
   their first team's default scheduler stays theirs (``services.followers``).
2. The learner decides after that: the decks page says whose order it is and offers each of their teams,
   or the default order, which then sticks (``cards.learning.use_default_order``): no owner overrides it.
3. Leaving (or being removed from) the team they follow hands them to the team they joined first among the
   rest, the rule of step 1, or back to the default order when none is left.
"""

from __future__ import annotations

from typing import Any, Literal

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cards import learning
from cards import review as reviewing
from cards.models import LearningStage, Profile, validate_stage_order

from .models import Membership, Team


def stages_of(team: Team) -> list[LearningStage]:
    """The stages in the team's order (the default order where the team set none)."""
    return learning.ordered_stages(team.learning_order)


def moved(stage_slugs: list[str], slug: str, direction: Literal["up", "down"]) -> list[str]:
    """The order with one stage a place up or down; unchanged at either end. ``ValueError`` for a stage not in it."""
    order = list(stage_slugs)
    i = order.index(slug)
    j = i - 1 if direction == "up" else i + 1
    if 0 <= j < len(order):
        order[i], order[j] = order[j], order[i]
    return order


def save_order(team: Team, stage_slugs: list[str]) -> int:
    """The team's new order (checked: ``ValidationError`` and nothing written), copied to every member who
    follows the team, in one transaction; returns how many members got it."""
    validate_stage_order(stage_slugs)
    with transaction.atomic():
        team.learning_order = list(stage_slugs)
        team.save(update_fields=["learning_order"])
        followers = Profile.objects.filter(learning_order_source=team.order_source, user__team_memberships__team=team)
        return followers.update(learning_order=team.learning_order)


def follower_count(team: Team) -> int:
    return Profile.objects.filter(learning_order_source=team.order_source, user__team_memberships__team=team).count()


def follow(team: Team, user: AbstractBaseUser) -> None:
    """The learner follows this team's order from now on (they must be a member)."""
    reviewing.get_profile(user).set_learning_order(_current(team), team.order_source)


def _current(team: Team) -> list[str]:
    """The team's order less the stages a later import removed (the queue skips them; a new copy may not name them)."""
    return [stage.slug for stage in stages_of(team) if stage.slug in team.learning_order]


def follows(team: Team, user: AbstractBaseUser) -> bool:
    return reviewing.get_profile(user).learning_order_source == team.order_source


def on_join(team: Team, user: AbstractBaseUser) -> bool:
    """Step 1: follow the team joined when nobody chose the learner's order yet; True when they now do."""
    if reviewing.get_profile(user).learning_order_source != "":
        return False
    follow(team, user)
    return True


def on_leave(team_source: str, user_id: int) -> None:
    """Step 3, after the membership is gone: a follower of that team follows their first remaining team,
    or the default order (open to the next team they join)."""
    profile = Profile.objects.filter(user_id=user_id, learning_order_source=team_source).first()
    if profile is None:
        return
    first = Membership.objects.filter(user_id=user_id).select_related("team").order_by("joined_at", "pk").first()
    if first is None:
        profile.set_learning_order([], "")
    else:
        profile.set_learning_order(_current(first.team), first.team.order_source)


def order_section(user: AbstractBaseUser) -> dict[str, Any]:
    """The decks page's part: whose order the learner follows, and the other teams they could follow."""
    source = reviewing.get_profile(user).learning_order_source
    teams = list(Team.objects.for_user(user).order_by("name", "pk"))
    following = next((team for team in teams if team.order_source == source), None)
    return {"following": following, "others": [team for team in teams if team is not following]}
