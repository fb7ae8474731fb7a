"""Team domain functions: create, invite, join, leave, remove, rename, rotate, transfer.

Joining and leaving also settle whose learning order the learner follows (``teams.learning_orders``).

Views and tasks call these; these call the pure rules (``teams.xp``, ``teams.streaks``). Every
membership change keeps the invariant "a team always has at least one owner" inside a transaction
that locks the team's memberships.
"""

from __future__ import annotations

import logging
import secrets
from datetime import date, timedelta
from typing import TypedDict
from urllib.parse import urlsplit

from django.contrib.auth.models import AbstractBaseUser
from django.core import signing
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.urls import Resolver404, resolve
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _

from cards import switching
from cards.models import ReviewLog, TouchedDay
from graders.models import Submission

from . import activity, boards, learning_orders
from .models import BoardPreference, DailyActivity, Membership, Team, new_invite_nonce

INVITE_SALT = "teams.invite"
INVITE_MAX_AGE = timedelta(days=7)
# Days one run recomputes at most, so no run holds a worker thread long: a backlog drains over the next runs,
# a second apart.
TOUCHED_PER_RUN = 200

logger = logging.getLogger(__name__)


class TeamError(Exception):
    """A request the rules refuse; the message is shown to the learner."""


def create_team(owner: AbstractBaseUser, name: str, time_zone: str) -> Team:
    """A new team with its creator as the first owner. The slug never changes, even on rename."""
    base = slugify(name)[:60] or "team"
    with transaction.atomic():
        team = Team.objects.create(name=name, time_zone=time_zone, slug=f"{base}-{secrets.token_hex(3)}")
        Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
        learning_orders.on_join(team, owner)
    return team


def invite_token(team: Team) -> str:
    """A signed, timestamped token naming the team and its current nonce."""
    return signing.dumps({"t": str(team.uuid), "n": team.invite_nonce}, salt=INVITE_SALT, compress=True)


def team_for_invite(token: str) -> Team:
    """The team a token invites to. Expired, forged or rotated tokens all fail the same way."""
    try:
        data = signing.loads(token, salt=INVITE_SALT, max_age=INVITE_MAX_AGE)
    except signing.BadSignature:
        raise TeamError(_("This invite link is invalid or has expired.")) from None
    team = Team.objects.filter(uuid=data.get("t"), invite_nonce=data.get("n")).first()
    if team is None:
        raise TeamError(_("This invite link is invalid or has expired."))
    return team


def invite_note(next_url: str) -> str | None:
    """For the login and sign-up pages an invite link (``teams:join``) sent a visitor to: the team it leads
    to. The link is the proof of being invited, so its team's name is theirs to read. None for any other
    address, and for a stale or forged link (the join page says why)."""
    try:
        match = resolve(urlsplit(next_url).path)
    except Resolver404:
        return None
    if match.view_name != "teams:join":
        return None
    try:
        team = team_for_invite(match.kwargs["token"])
    except TeamError:
        return None
    return _("Log in or sign up to join the team “%(name)s”.") % {"name": team.name}


def join(team: Team, user: AbstractBaseUser) -> Membership:
    """Join as a member; joining twice is harmless and keeps the original role and join time."""
    membership, created = Membership.objects.get_or_create(team=team, user=user)
    if created:
        learning_orders.on_join(team, user)
        boards.publish_user(user.pk, _today(user.pk))
        if user in followers(team):
            switching.follow_team_default([user], team.default_scheduler, timezone.now())
    return membership


def followers(team: Team) -> list[AbstractBaseUser]:
    """Members for whom this team is their first: a learner in several teams follows the one joined first."""
    first = Membership.objects.filter(user=OuterRef("user")).order_by("joined_at", "pk").values("team_id")[:1]
    rows = Membership.objects.filter(team=team).annotate(first_team=Subquery(first)).filter(first_team=team.pk)
    return [membership.user for membership in rows.select_related("user")]


def set_default_scheduler(team: Team, scheduler: str) -> int:
    """The team's default scheduler, switched for every follower who never chose one; returns how many."""
    team.default_scheduler = scheduler
    team.save(update_fields=["default_scheduler"])
    return switching.follow_team_default(followers(team), scheduler, timezone.now())


def rotate_invite(team: Team) -> None:
    """A new nonce: every link handed out before stops working."""
    team.invite_nonce = new_invite_nonce()
    team.save(update_fields=["invite_nonce"])


def rename(team: Team, name: str) -> None:
    team.name = name
    team.save(update_fields=["name"])


def _locked_memberships(team: Team) -> list[Membership]:
    return list(Membership.objects.select_for_update().filter(team=team).order_by("pk"))


def leave(team: Team, user: AbstractBaseUser) -> None:
    """Leave the team. The last owner must hand ownership on first (or be the last member)."""
    team_id, source = team.pk, team.order_source  # delete() below clears team.pk
    with transaction.atomic():
        memberships = _locked_memberships(team)
        mine = next((m for m in memberships if m.user_id == user.pk), None)
        if mine is None:
            return
        owners = [m for m in memberships if m.is_owner]
        if mine.is_owner and len(owners) == 1 and len(memberships) > 1:
            raise TeamError(_("You are the last owner: transfer ownership before you leave."))
        mine.delete()
        if len(memberships) == 1:
            team.delete()
        learning_orders.on_leave(source, user.pk)
    boards.drop_user_from_team(team_id, user.pk)


def remove_member(team: Team, actor: Membership, target: Membership) -> None:
    """An owner removes someone else (owners leave through ``leave``).

    The invite link is rotated with the removal: the removed learner still holds the link they joined with
    (and any link the team page showed them), and would otherwise walk straight back in.
    """
    if not actor.is_owner:
        raise TeamError(_("Only an owner can remove members."))
    if target.user_id == actor.user_id:
        raise TeamError("Use “Leave team” to remove yourself.")
    with transaction.atomic():
        removed = Membership.objects.filter(pk=target.pk, team=team).delete()[0]
        if removed:
            rotate_invite(team)
        learning_orders.on_leave(team.order_source, target.user_id)
    boards.drop_user_from_team(team.pk, target.user_id)


def transfer_ownership(team: Team, actor: Membership, target: Membership) -> None:
    """Make ``target`` the owner and the former owner a member, in one transaction."""
    if not actor.is_owner:
        raise TeamError(_("Only an owner can transfer ownership."))
    if target.team_id != team.pk or target.pk == actor.pk:
        raise TeamError(_("Pick another member of this team."))
    with transaction.atomic():
        _locked_memberships(team)
        Membership.objects.filter(pk=target.pk).update(role=Membership.Role.OWNER)
        Membership.objects.filter(pk=actor.pk).update(role=Membership.Role.MEMBER)


def set_role(team: Team, actor: Membership, target: Membership, role: str) -> None:
    """An owner names a member an editor of the team's course, or makes an editor a member again.

    Owners keep their role here (ownership moves through ``transfer_ownership``); the row is changed only
    when it is still the team's and not an owner's, so a concurrent transfer is never undone.
    """
    if not actor.is_owner:
        raise TeamError(_("Only an owner can name editors."))
    if role not in (Membership.Role.EDITOR, Membership.Role.MEMBER):
        raise TeamError(_("A member can be made an editor or a member, nothing else here."))
    if target.team_id != team.pk or target.is_owner:
        raise TeamError(_("Pick a member of this team who is not an owner."))
    changed = Membership.objects.filter(pk=target.pk, team=team).exclude(role=Membership.Role.OWNER).update(role=role)
    if not changed:
        raise TeamError(_("Pick a member of this team who is not an owner."))
    target.role = role


def set_preferences(user: AbstractBaseUser, *, global_board: bool, daily_digest: bool) -> BoardPreference:
    pref, _created = BoardPreference.objects.get_or_create(user=user)
    if global_board and not pref.global_board:
        pref.global_since = timezone.now()
    pref.global_board, pref.daily_digest = global_board, daily_digest
    pref.save(update_fields=["global_board", "daily_digest", "global_since"])
    if not global_board:
        conn = boards.client()
        if conn is not None:
            for key in conn.scan_iter(match=f"{boards.prefix()}z:global:*", count=500):
                conn.zrem(key, str(user.pk))
    boards.publish_user(user.pk, _today(user.pk))
    return pref


def _today(user_id: int) -> date:
    clock = activity.clock_for(user_id)
    return clock.today(timezone.now())


def refresh_learner_day(user_id: int, day: date, clock: activity.Clock | None = None) -> None:
    """Recompute one learner day's rollup from the ledger, then their live boards."""
    activity.refresh_day(user_id, day, clock)
    boards.publish_user(user_id, day)


def claim(touched_id: int) -> bool:
    """Delete one touched day; True when this call removed it. Call inside the recompute's transaction:
    a concurrent claim of the same row waits for that transaction, then removes nothing and loses; a
    recompute that dies rolls its claim back, so the day waits for the next run."""
    return TouchedDay.objects.filter(pk=touched_id).delete()[0] == 1


def touched_learners(limit: int = TOUCHED_PER_RUN) -> set[int]:
    """The learners whose marked days the next ``refresh_touched_days`` takes."""
    return set(TouchedDay.objects.order_by("pk").values_list("user_id", flat=True)[:limit])


def refresh_touched_days(limit: int = TOUCHED_PER_RUN) -> int:
    """Recompute the learner days that facts marked (``cards.touched``), oldest first, each exactly once per
    mark: claim and recompute share one transaction. A day that fails stays marked (logged) and the others
    go on. Returns the days recomputed."""
    waiting = list(TouchedDay.objects.order_by("pk").values_list("pk", "user_id", "day")[:limit])
    clocks = activity.clocks_for({user_id for _, user_id, _ in waiting})
    done = 0
    for touched_id, user_id, day in waiting:
        try:
            with transaction.atomic():
                if not claim(touched_id):
                    continue  # another run recomputed it
                refresh_learner_day(user_id, day, clocks[user_id])
        except Exception:
            logger.exception("could not recompute the day %s of user %s; the next run tries again", day, user_id)
            continue
        done += 1
    return done


class RebuildReport(TypedDict):
    learners: int
    days_changed: int
    redis_keys: int


def _day_tuple(d: DailyActivity) -> tuple[object, ...]:
    return (
        d.day,
        d.xp,
        d.review_xp,
        d.drill_xp,
        d.reviewed,
        d.reviews,
        d.mature_reviews,
        d.mature_passed,
        d.drills_solved,
        d.drills_first_try,
        d.next_due,
        d.limit_reached,
        d.streak_state,
    )


def rebuild_all(*, dry_run: bool, user_ids: list[int] | None = None) -> RebuildReport:
    """Recompute every learner's rollup from ReviewLog and Submission, then the Redis boards.

    1. Find every learner with reviews, submissions or an old rollup.
    2. Recompute their days; count the days that differ from the stored rollup.
    3. Unless ``dry_run``: replace the stored days, then drop and rewrite the Redis boards.
    """
    if user_ids is None:
        found = set(ReviewLog.objects.values_list("user_id", flat=True).distinct())
        found |= set(Submission.objects.values_list("user_id", flat=True).distinct())
        found |= set(DailyActivity.objects.values_list("user_id", flat=True).distinct())
        user_ids = sorted(found)
    changed = 0
    for user_id in user_ids:
        days = activity.rebuild_user(user_id)
        fresh = {d.day: _day_tuple(d) for d in days}
        stored = {d.day: _day_tuple(d) for d in DailyActivity.objects.filter(user_id=user_id)}
        changed += sum(1 for day in fresh.keys() | stored.keys() if fresh.get(day) != stored.get(day))
        if not dry_run:
            activity.replace_user_days(user_id, days)
    keys = 0 if dry_run else boards.rebuild()["keys"]
    return RebuildReport(learners=len(user_ids), days_changed=changed, redis_keys=keys)
