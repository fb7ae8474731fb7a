"""One sandbox run of an output card's snippet: a job (``jobs.lifecycle``), cached by what ran."""

from __future__ import annotations

from typing import get_args

from django.db import models
from django.utils.translation import pgettext_lazy

from cards.models import Card
from jobs.models import Job, job_constraints
from jobs.status import JOB_DONE, PENDING, choices
from outputs.snippets import GRADABLE_KINDS, RunKind

OUTCOMES = get_args(RunKind)
# What each outcome is called on the answer box ("cannot be checked automatically (random)").
OUTCOME_LABELS = {
    "ok": pgettext_lazy("snippet outcome", "ok"),
    "raised": pgettext_lazy("snippet outcome", "raised"),
    "random": pgettext_lazy("snippet outcome", "random"),
    "needs_context": pgettext_lazy("snippet outcome", "needs context"),
    "unsupported": pgettext_lazy("snippet outcome", "unsupported"),
    "failed": pgettext_lazy("snippet outcome", "failed"),
}


class SnippetRun(Job):
    """The grader compares a learner's answer with ``output``; the notes check compares the note's shown
    output with it. A changed snippet (or adapter) has a new ``content_hash`` and so a new row.
    """

    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="snippet_runs")
    content_hash = models.CharField(max_length=64, help_text="Hash of the runnable cells and the adapter version.")
    status = models.CharField(max_length=16, choices=choices((*PENDING, *JOB_DONE)), default=PENDING[0].value)
    outcome = models.CharField(
        max_length=16, blank=True, choices=[(o, OUTCOME_LABELS[o]) for o in OUTCOMES], help_text="What the run means."
    )
    output = models.TextField(blank=True, help_text="What the snippet really printed (the last cell).")
    error = models.TextField(blank=True, help_text="Why it is not gradable, for any outcome but ok.")
    context_outcome = models.CharField(
        max_length=16,
        blank=True,
        help_text="When it needs context: the outcome of a run after the note's earlier code.",
    )
    context_output = models.TextField(blank=True, help_text="What that run printed.")
    wall_ms = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            *job_constraints("snippetrun", JOB_DONE),
            # One run per snippet version; the grader looks it up by (card, content_hash).
            models.UniqueConstraint(fields=["card", "content_hash"], name="snippetrun_card_hash_unique"),
            models.CheckConstraint(condition=models.Q(outcome__in=["", *OUTCOMES]), name="snippetrun_outcome_valid"),
        ]
        indexes = [
            # The reaper: pending rows by status and claim age.
            models.Index(
                fields=["status", "claimed_at"], condition=models.Q(status__in=PENDING), name="snippetrun_pending_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"snippet of card {self.card_id}: {self.status} {self.outcome}"

    @property
    def is_gradable(self) -> bool:
        """Ran deterministically, alone or (a snippet continuing an earlier block) after the note's earlier code."""
        if self.outcome in GRADABLE_KINDS:
            return True
        return self.outcome == "needs_context" and self.context_outcome in GRADABLE_KINDS

    @property
    def graded_output(self) -> str:
        """The output a typed answer is compared with."""
        return self.context_output if self.outcome == "needs_context" else self.output


class OutputCheck(models.Model):
    """Whether an output card may be reviewed, kept by this app (``outputs.verify``) beside the card.

    The importer writes output cards inactive and never activates them; it says which cards each note
    has now (``in_note``) and what the note shows. A card is active only while it is in its note and the
    sandbox's run of its code qualifies (``snippets.verdict``); its back is then what the sandbox printed.
    """

    class State(models.TextChoices):
        PENDING = "pending", "Waiting for the sandbox"
        VERIFIED = "verified", "Verified"
        EXCLUDED = "excluded", "Kept out of review"

    card = models.OneToOneField(Card, on_delete=models.CASCADE, primary_key=True, related_name="output_check")
    in_note = models.BooleanField(default=True, help_text="The last import found the card in its note.")
    note_output = models.TextField(blank=True, help_text="What the note shows it prints (the notes check compares).")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    problem = models.CharField(max_length=32, blank=True, help_text="Why it is kept out of review.")
    detail = models.TextField(blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state__in=["pending", "verified", "excluded"]), name="outputcheck_state_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"output card {self.card_id}: {self.state}"
