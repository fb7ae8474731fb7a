"""Snippet runs of ``output`` cards: find or request the cached run, and do a run (worker side).

The web process only reads ``SnippetRun`` rows and asks for missing ones (a pending row plus a Celery
task after commit); a worker claims the row with a conditional update, runs the snippet in its warm
sandbox pool and records one final status. The notes check calls ``execute_run`` with its own pool.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, TypedDict

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from cards.models import Card
from graders import outputs
from graders.models import SnippetRun

if TYPE_CHECKING:
    from graders.sandbox import SandboxPool

# A RUNNING row claimed longer ago has lost its worker (two seeds x the sandbox's 5 s wall limit, and more).
STALE_AFTER = timedelta(minutes=2)
CONTEXT_BUDGET = 12_000  # bytes of earlier code; the sandbox refuses programs over 20,000


def snippet_for(card: Card) -> outputs.Snippet | None:
    """The runnable snippet of an output card (None for any other card, or a card without code)."""
    if card.kind != Card.Kind.OUTPUT:
        return None
    return outputs.snippet_from_card(card.front, card.back)


def current_run(card: Card, snippet: outputs.Snippet) -> SnippetRun | None:
    return SnippetRun.objects.filter(card=card, content_hash=snippet.content_hash).first()


def request_run(card: Card, snippet: outputs.Snippet) -> SnippetRun:
    """The card's run for this snippet version; a missing one is created pending and sent to a worker."""
    run = current_run(card, snippet)
    if run is not None:
        return run
    try:
        with transaction.atomic():
            run = SnippetRun.objects.create(card=card, content_hash=snippet.content_hash)
    except IntegrityError:  # a concurrent request created it first
        return SnippetRun.objects.get(card=card, content_hash=snippet.content_hash)
    enqueue(run.pk)
    return run


def enqueue(run_id: int) -> None:
    from graders.output_tasks import run_snippet

    transaction.on_commit(lambda: run_snippet.delay(run_id))


def claim(run_id: int) -> bool:
    """Exactly one worker gets a pending row (or one whose claimant died)."""
    now = timezone.now()
    stale = Q(status=SnippetRun.Status.RUNNING, claimed_at__lt=now - STALE_AFTER)
    claimable = Q(status=SnippetRun.Status.PENDING) | stale
    return SnippetRun.objects.filter(claimable, pk=run_id).update(status=SnippetRun.Status.RUNNING, claimed_at=now) == 1


def execute_run(run_id: int, pool: SandboxPool, *, with_context: bool = False) -> str:
    """Claim, run and record one snippet run; returns its final status ("" when not claimed).

    ``with_context`` (the task and the notes check): a snippet that needs names from earlier in the note is run a
    second time after the note's earlier code, and that result is kept in ``context_*``.
    """
    if not claim(run_id):
        return ""
    run = SnippetRun.objects.select_related("card__note").get(pk=run_id)
    snippet = snippet_for(run.card)
    started = timezone.now()
    if snippet is None or snippet.content_hash != run.content_hash:
        outcome = outputs.RunOutcome("failed", "", "the card changed since this run was requested")
    else:
        outcome = outputs.evaluate(snippet, _runner(pool))
        if outcome.kind == "failed":  # a child that died or timed out once may be the host's hiccup
            outcome = outputs.evaluate(snippet, _runner(pool))
    run.status, run.output, run.error = outcome.kind, outcome.output, outcome.error
    if with_context and snippet is not None and outcome.kind == "needs_context":
        context = _allowed(outputs.note_context(run.card.note.content, snippet))
        if context:
            again = outputs.evaluate(snippet, _runner(pool), context)
            run.context_status, run.context_output = again.kind, again.output
            if again.kind != "ok":
                run.context_output = (again.output + "\n" + again.error).strip()
    run.ran_at = timezone.now()
    run.wall_ms = int((run.ran_at - started).total_seconds() * 1000)
    fields = ["status", "output", "error", "context_status", "context_output", "ran_at", "wall_ms"]
    SnippetRun.objects.filter(pk=run.pk, status=SnippetRun.Status.RUNNING).update(
        **{name: getattr(run, name) for name in fields}
    )
    return run.status


def _runner(pool: SandboxPool) -> Callable[[str], tuple[str, str, str]]:
    def run(program: str) -> tuple[str, str, str]:
        result = pool.run(program, outputs.ENTRY_POINT, [()])
        return result.status, result.stdout, result.message

    return run


def _allowed(cells: tuple[str, ...]) -> tuple[str, ...]:
    """Context cells the sandbox compiles (one rejected cell would reject the whole program), the nearest
    ones first, within a size budget that keeps the whole program under the sandbox's source limit."""
    from graders.sandbox.policy import Rejected, compile_submission

    kept: list[str] = []
    size = 0
    for cell in reversed(cells):
        try:
            compile_submission(cell, CONTEXT_BUDGET)
        except Rejected:
            continue
        size += len(cell.encode("utf-8")) + 40
        if size > CONTEXT_BUDGET:
            break
        kept.append(cell)
    return tuple(reversed(kept))


class FindingRow(TypedDict):
    """One finding of the notes check, as the page, the command and its ``--json`` show it."""

    note: str
    heading: str
    anchor: str
    card: str
    severity: str
    problem: str
    detail: str
    shown: str
    real_output: str


class CheckReport(TypedDict):
    findings: list[FindingRow]
    checked: int  # output cards with a final run
    unchecked: int  # output cards without one yet


def output_cards() -> list[tuple[Card, outputs.Snippet]]:
    """Every active output card with a snippet, in note order."""
    cards = (
        Card.objects.active().filter(kind=Card.Kind.OUTPUT).select_related("note").order_by("note__slug", "position")
    )
    pairs = [(card, snippet_for(card)) for card in cards]
    return [(card, snippet) for card, snippet in pairs if snippet is not None]


def check_report(include_info: bool = False) -> CheckReport:
    """The notes check from the stored runs: one row per snippet whose note shows the wrong thing."""
    pairs = output_cards()
    runs = {
        (run.card_id, run.content_hash): run for run in SnippetRun.objects.filter(card__in=[card for card, _ in pairs])
    }
    findings: list[FindingRow] = []
    checked = 0
    for card, snippet in pairs:
        run = runs.get((card.pk, snippet.content_hash))
        if run is None or not run.is_final:
            continue
        checked += 1
        found = outputs.check_finding(
            snippet.shown, run.status, run.output, run.error, run.context_status, run.context_output
        )
        if found is None or (found.severity == "info" and not include_info):
            continue
        findings.append(
            FindingRow(
                note=card.note.path,
                heading=card.heading_path,
                anchor=card.anchor,
                card=str(card.uuid),
                severity=found.severity,
                problem=found.problem,
                detail=found.detail,
                shown=snippet.shown,
                real_output=found.real_output,
            )
        )
    return CheckReport(findings=findings, checked=checked, unchecked=len(pairs) - checked)
