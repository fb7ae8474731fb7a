"""What writing a course keeps between requests (the tables of the authoring flow).

``Upload``: notes an editor sent, kept between the preview and the confirmation, so the confirmation imports
exactly what was previewed (and re-plans it against the database first). ``CourseFile``: the files of a
course's folder as their author wrote them, so an export gives back a folder that imports to the same cards
(a note's curated cards file lives nowhere else).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from cards.models import Course
from teams.models import Team


class UploadQuerySet(models.QuerySet["Upload"]):
    def of_team(self, team: Team) -> UploadQuerySet:
        return self.filter(team=team)

    def since(self, moment: datetime) -> UploadQuerySet:
        return self.filter(created_at__gte=moment)


class Upload(models.Model):
    """Notes uploaded for a team's course: their text, the import report they give, who sent them and when."""

    class State(models.TextChoices):
        PREVIEW = "preview", "Waiting for confirmation"
        CONFIRMED = "confirmed", "Imported"
        DISCARDED = "discarded", "Discarded"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False, help_text="The public id.")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="course_uploads")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="course_uploads"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(help_text="A preview not confirmed by then is dropped; upload again.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PREVIEW)
    files = models.JSONField(
        default=list, help_text='The notes as uploaded: [{"name", "text", "cards_name", "cards_text"}, ...].'
    )
    size = models.PositiveIntegerField(default=0, help_text="Bytes uploaded (a zip counted unpacked).")
    report = models.JSONField(default=dict, help_text="The import report the preview shows (courses.reports).")
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    confirmed_at = models.DateTimeField(null=True, blank=True)

    objects = UploadQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            # The per-hour cap and the course page's recent uploads: WHERE team = ? AND created_at >= ?.
            models.Index(fields=["team", "-created_at"], name="upload_team_created_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state__in=["preview", "confirmed", "discarded"]), name="upload_state_valid"
            ),
            # A confirmed upload says when it was confirmed; a preview or a discarded one does not.
            models.CheckConstraint(
                condition=models.Q(state="confirmed", confirmed_at__isnull=False)
                | (~models.Q(state="confirmed") & models.Q(confirmed_at__isnull=True)),
                name="upload_confirmed_has_time",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.team} upload {self.uuid} ({self.state})"

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.state == self.State.PREVIEW and (now or timezone.now()) >= self.expires_at

    @property
    def names(self) -> list[str]:
        """The notes' names as uploaded (the page's title for a preview)."""
        return [entry["name"] for entry in self.files]


class CourseFile(models.Model):
    """One file of a course's folder as its author wrote it (``<note>.md``, ``cards/<note>.toml``)."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=300, help_text="Its path inside the course's folder.")
    text = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["course", "path"]
        constraints = [
            # Also serves the export and the upsert: WHERE course = ? (AND path = ?).
            models.UniqueConstraint(fields=["course", "path"], name="coursefile_course_path_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.course.slug}/{self.path}"
