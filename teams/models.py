"""Teams, memberships, board preferences, season history and the daily activity rollup.

XP is never stored as the only copy: ``DailyActivity`` is a cache of what ``teams.xp`` derives from
``cards.ReviewLog`` and ``graders.Submission``, kept current by beat's ``teams.tasks.refresh_touched_days``
(the days that facts marked in ``cards.TouchedDay``) and recomputed from scratch by ``manage.py rebuild_boards``.
"""

from __future__ import annotations

import secrets
import uuid
import zoneinfo

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cards.models import Course, Scheduler, default_time_zone, validate_stage_order, validate_time_zone
from graders.drills.solution_key import KEY_LENGTH

from .streaks import ActiveDay, Streak

COMMENT_MAX_CHARS = 2000  # a comment on a group of solutions


def new_invite_nonce() -> str:
    return secrets.token_urlsafe(12)


class TeamQuerySet(models.QuerySet["Team"]):
    def for_user(self, user: object) -> TeamQuerySet:
        """The teams a user belongs to: the only teams they may see."""
        return self.filter(memberships__user=user)


class Team(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    slug = models.SlugField(max_length=80, unique=True, help_text="The public id in URLs; fixed at creation.")
    name = models.CharField(max_length=100)
    time_zone = models.CharField(
        max_length=64,
        default=default_time_zone,
        validators=[validate_time_zone],
        help_text="Weekly seasons start on Monday at 04:00 in this time zone.",
    )
    default_scheduler = models.CharField(
        max_length=8,
        choices=Scheduler.choices,
        default=Scheduler.SM2,
        help_text="The scheduler of members who never chose one and joined this team first.",
    )
    learning_order = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_stage_order],
        help_text="Stage slugs in the order the members who follow this team get new cards; empty means the "
        "default order. Set by the owners; teams.learning_orders copies it into each follower's profile.",
    )
    invite_nonce = models.CharField(
        max_length=32, default=new_invite_nonce, help_text="Part of every invite token; rotating it kills old links."
    )
    course = models.OneToOneField(
        Course,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="team",
        help_text="The team's own notes and drills, which only its members see; made when an editor first adds one.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["name", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(default_scheduler__in=["sm2", "fsrs"]), name="team_default_scheduler_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.time_zone)

    @property
    def order_source(self) -> str:
        """How a follower's profile names this team as the source of their learning order."""
        return f"team:{self.uuid}"


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", _("Owner")
        EDITOR = "editor", _("Editor")  # writes the team's course (notes and drills); otherwise a member
        MEMBER = "member", _("Member")

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    # db_index off: the (user, team) index below leads with user.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships", db_index=False
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["joined_at", "pk"]
        constraints = [
            # Also serves the access check and the member list: WHERE team = ? (AND user = ?).
            models.UniqueConstraint(fields=["team", "user"], name="membership_team_user_unique"),
            models.CheckConstraint(
                condition=models.Q(role__in=["owner", "editor", "member"]), name="membership_role_valid"
            ),
        ]
        indexes = [
            # "My teams" and the board fan-out on each review: WHERE user = ?.
            models.Index(fields=["user", "team"], name="membership_user_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.team_id} ({self.role})"

    @property
    def is_owner(self) -> bool:
        return self.role == self.Role.OWNER

    @property
    def can_edit_course(self) -> bool:
        """Owners and the editors they named write the team's course."""
        return self.role in (self.Role.OWNER, self.Role.EDITOR)


class BoardPreference(models.Model):
    """Per-user opt-ins. No row means the defaults: off the global board, no digest."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="board_preference")
    global_board = models.BooleanField(default=False, help_text="Show me on the global leaderboard.")
    daily_digest = models.BooleanField(default=False, help_text="Email me a short daily digest.")
    global_since = models.DateTimeField(null=True, blank=True, help_text="Tie-break on the global board.")
    last_digest_on = models.DateField(null=True, blank=True, help_text="The learner day of the last digest sent.")
    confirmed_email = models.EmailField(
        blank=True,
        help_text="The address the learner confirmed through the signed link mailed to it (teams.digests); a digest "
        "goes out only while it is the account's address.",
    )

    class Meta:
        indexes = [
            # The digest task: WHERE daily_digest = true.
            models.Index(fields=["daily_digest"], condition=models.Q(daily_digest=True), name="boardpref_digest_idx"),
        ]

    def __str__(self) -> str:
        return f"board preferences of {self.user_id}"


class SeasonResult(models.Model):
    """The podium of one team's finished weekly season, written once by the rollover task."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="season_results")
    season = models.DateField(help_text="The Monday the season started.")
    rank = models.PositiveSmallIntegerField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="season_results")
    xp = models.PositiveIntegerField()
    score = models.FloatField()
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-season", "rank"]
        constraints = [
            # Also serves the team's history page: WHERE team = ? ORDER BY season DESC, rank.
            models.UniqueConstraint(fields=["team", "season", "rank"], name="seasonresult_team_season_rank_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.team_id} {self.season} #{self.rank}: {self.user_id}"


class DailyActivity(models.Model):
    """One learner day, as ``teams.xp`` and ``teams.streaks`` see it. A cache: rebuildable at any time."""

    # db_index off: the (user, day) unique constraint leads with user.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="daily_activity", db_index=False
    )
    day = models.DateField(help_text="The learner day (04:00 to 04:00 in their time zone).")
    xp = models.PositiveIntegerField(default=0, help_text="review_xp + drill_xp: what the boards sum.")
    review_xp = models.PositiveIntegerField(default=0)
    drill_xp = models.PositiveIntegerField(default=0)
    reviewed = models.BooleanField(default=False, help_text="Any review that day: the day counts for streaks.")
    reviews = models.PositiveIntegerField(default=0, help_text="Own ratings, same-day repeats left out.")
    mature_reviews = models.PositiveIntegerField(default=0)
    mature_passed = models.PositiveIntegerField(default=0)
    drills_solved = models.PositiveIntegerField(default=0)
    drills_first_try = models.PositiveIntegerField(default=0)
    next_due = models.DateField(null=True, blank=True, help_text="Earliest due day after the day's last review.")
    limit_reached = models.BooleanField(default=False, help_text="The daily review limit was used up.")
    # The streak as it stood at the end of the day before (teams.streaks.streak_before), so the current
    # streak needs only the latest active day, never the whole history.
    streak_before = models.PositiveIntegerField(default=0)
    longest_before = models.PositiveIntegerField(default=0)
    freezes_before = models.PositiveSmallIntegerField(default=0)
    freezes_used_before = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["user", "day"]
        constraints = [
            # Boards and streaks: WHERE user IN (...) AND day BETWEEN ? AND ? (GROUP BY user).
            models.UniqueConstraint(fields=["user", "day"], name="dailyactivity_user_day_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} on {self.day}: {self.xp} XP"

    @property
    def active_day(self) -> ActiveDay:
        return ActiveDay(self.day, self.next_due, self.limit_reached)

    @property
    def streak_state(self) -> Streak:
        return Streak(self.streak_before, self.longest_before, self.freezes_before, self.freezes_used_before, False)

    def set_streak_state(self, state: Streak) -> None:
        self.streak_before, self.longest_before = state.current, state.longest
        self.freezes_before, self.freezes_used_before = state.freezes, state.freezes_used


class SolutionComment(models.Model):
    """A team teacher's (owner or editor) comment on one group of a drill's accepted solutions (issue 41).

    A group is a normalised-code key (``graders.drills.solution_key``), not a list of submissions: the comment
    reaches every member of the team whose accepted code has that key, those who solve the drill later included.
    Only the team's members ever read it (``teams.solutions``). Its author, while still a teacher of the team,
    may edit it (the readers see the new text, marked edited) or delete it.
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    drill = models.ForeignKey("graders.Drill", on_delete=models.CASCADE, related_name="+")
    solution_key = models.CharField(max_length=KEY_LENGTH)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="solution_comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    text = models.TextField(max_length=COMMENT_MAX_CHARS)
    created_at = models.DateTimeField(default=timezone.now)
    edited_at = models.DateTimeField(null=True, blank=True)  # its author's last edit: the page says "edited"

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [
            # The solutions page: WHERE drill = ? AND team IN (the viewer's teams) AND solution_key IN (the groups).
            models.Index(fields=["drill", "team", "solution_key"], name="solutioncomment_group_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=~models.Q(text=""), name="solutioncomment_text_not_empty"),
        ]

    def __str__(self) -> str:
        return f"comment {self.uuid} on {self.drill_id}/{self.solution_key[:10]}"
