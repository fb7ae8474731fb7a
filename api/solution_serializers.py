"""The solutions API's payloads (issue 41): a drill's solution groups and a team teacher's comment."""

from __future__ import annotations

from rest_framework import serializers

from graders.drills.solution_key import KEY_LENGTH
from teams.models import COMMENT_MAX_CHARS


class SolutionCommentSerializer(serializers.Serializer):
    """A team teacher's comment on a group of solutions; only the team's members read it."""

    uuid = serializers.UUIDField(help_text="Its author edits or deletes it by this.")
    text = serializers.CharField()
    team = serializers.CharField(source="team.name", help_text="The team whose teacher wrote it.")
    author = serializers.CharField(source="author.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    edited_at = serializers.DateTimeField(allow_null=True, help_text="Its author's last edit; null if never edited.")


class SolutionGroupSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The normalised code's key: comments name the group by it.")
    learners = serializers.IntegerField(help_text="Distinct learners whose accepted code is in the group.")
    code = serializers.CharField(help_text="One of the group's solutions (yours when you are in it).")
    mine = serializers.BooleanField(help_text="Your accepted code is in this group.")
    reference = serializers.BooleanField(help_text="The reference solution is in this group.")
    comments = SolutionCommentSerializer(many=True)


class DrillSolutionsSerializer(serializers.Serializer):
    """A drill's accepted solutions grouped by normalised code, largest group first."""

    site_wide = serializers.BooleanField(help_text="Every learner's solutions, not only your teams'.")
    groups = SolutionGroupSerializer(many=True)


class SolutionCommentCreateSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=KEY_LENGTH, help_text="The group's key, from the solutions' `groups`.")
    team = serializers.SlugField(max_length=80, help_text="The slug of a team you own or edit.")
    text = serializers.CharField(max_length=COMMENT_MAX_CHARS)


class SolutionCommentEditSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=COMMENT_MAX_CHARS, help_text="The comment's new text.")
