"""Notes, the cards made from them, and each learner's SM-2 state for each card."""

from __future__ import annotations

import uuid

from django.db import models


class Note(models.Model):
    """One imported markdown file. Cards keep pointing at it across re-imports."""

    slug = models.SlugField(max_length=120, unique=True)
    path = models.CharField(max_length=500, help_text="The file name the note was imported from.")
    title = models.CharField(max_length=300)
    content = models.TextField(help_text="The markdown source, kept to render the note page.")
    content_hash = models.CharField(max_length=64)
    imported_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.title


class CardQuerySet(models.QuerySet["Card"]):
    def active(self) -> CardQuerySet:
        return self.filter(active=True)


class Card(models.Model):
    class Kind(models.TextChoices):
        QA = "qa", "Question"
        MAPPING = "mapping", "Mapping"
        CLOZE = "cloze", "Cloze"
        OUTPUT = "output", "Output"
        DRILL = "drill", "Coding drill"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    key = models.CharField(
        max_length=64, unique=True, help_text="Stable across re-imports: note, heading path, kind and identity."
    )
    note = models.ForeignKey(Note, on_delete=models.PROTECT, related_name="cards")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    front = models.TextField(help_text="Markdown.")
    back = models.TextField(help_text="Markdown.")
    front_html = models.TextField(help_text="Sanitised HTML rendered at import time.")
    back_html = models.TextField(help_text="Sanitised HTML rendered at import time.")
    heading_path = models.CharField(max_length=500, blank=True)
    anchor = models.CharField(max_length=200, blank=True, help_text="The heading's id on the rendered note page.")
    tags = models.JSONField(default=list, blank=True)
    position = models.PositiveIntegerField(default=0, help_text="Order of the card within its note.")
    content_hash = models.CharField(max_length=64)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = CardQuerySet.as_manager()

    class Meta:
        ordering = ["note", "position"]
        indexes = [
            # New-card queue: active cards in note order.
            models.Index(fields=["active", "note", "position"], name="card_active_order_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=~models.Q(front=""), name="card_front_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.front[:60]}"
