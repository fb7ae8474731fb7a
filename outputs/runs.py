"""Snippet runs of ``output`` cards: find or request the cached run (web side), and the job kind that runs one.

The web process only reads ``SnippetRun`` rows and asks for missing ones (a queued row, sent to a worker
after commit); the run itself is a job like any other sandbox work (``jobs.lifecycle``): a worker claims the
row, runs the snippet in its warm sandbox pool and records one final result. The notes check runs the
same jobs in its own pool.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from django.db.models import Q

from cards.models import Card
from jobs.lifecycle import Finished, register
from jobs.status import Status
from outputs import snippets
from outputs.models import OutputCheck, SnippetRun
from outputs.verify import after_run, snippet_for

if TYPE_CHECKING:
    from graders.sandbox import SandboxPool

CONTEXT_BUDGET = 12_000  # bytes of earlier code; the sandbox refuses programs over 20,000


class SnippetKind:
    name: ClassVar[str] = "snippet"
    model: ClassVar[type[SnippetRun]] = SnippetRun
    related: ClassVar[tuple[str, ...]] = ()

    def queue(self, job: SnippetRun) -> str:
        """Snippets are small CPU programs; a GPU worker consumes the CPU queue too."""
        from django.conf import settings

        return settings.GRADER_QUEUE_CPU

    def load(self, pk: int) -> SnippetRun:
        return SnippetRun.objects.select_related("card__note").get(pk=pk)

    def attach(self, job: SnippetRun) -> SnippetRun:
        """The run's card and note (``snippet_for`` and the note's earlier code read them), in one query."""
        job.card = Card.objects.select_related("note").get(pk=job.card_id)
        return job

    def run(self, job: SnippetRun, pool: Any, *, worker: str) -> Finished:
        """Two seeds (random output is not gradable); a snippet that needs the note's earlier code runs again
        after it, and that result is kept in ``context_*``."""
        started = time.perf_counter()
        snippet = snippet_for(job.card)
        if snippet is None or snippet.content_hash != job.content_hash:
            outcome = snippets.RunOutcome("failed", "", "the card changed since this run was requested")
        else:
            outcome = snippets.evaluate(snippet, _runner(pool))
            if outcome.kind == "failed":  # a child that died or timed out once may be the host's hiccup
                outcome = snippets.evaluate(snippet, _runner(pool))
        fields: dict[str, Any] = {"outcome": outcome.kind, "output": outcome.output, "error": outcome.error}
        if snippet is not None and outcome.kind == "needs_context":
            context = _allowed(snippets.note_context(job.card.note.content, snippet))
            if context:
                again = snippets.evaluate(snippet, _runner(pool), context)
                fields["context_outcome"] = again.kind
                fields["context_output"] = again.output if again.kind == "ok" else (again.output + "\n" + again.error)
                fields["context_output"] = fields["context_output"].strip()
        fields["wall_ms"] = round((time.perf_counter() - started) * 1000)
        return Finished(Status.DONE, fields)

    def failed(self, message: str) -> Finished:
        return Finished(Status.INTERNAL_ERROR, {"outcome": "failed", "error": message[:2000]})

    def on_finish(self, job: SnippetRun, finished: Finished, now: datetime) -> None:
        """The card is activated with what the sandbox printed, or kept out of review (``outputs.verify``).

        ``job`` is the row as claimed (still running in memory): the finished row is read again.
        """
        job.refresh_from_db()
        after_run(job)


SNIPPETS = register(SnippetKind())


def _runner(pool: SandboxPool) -> Callable[[str], tuple[str, str, str]]:
    def run(program: str) -> tuple[str, str, str]:
        result = pool.run(program, snippets.ENTRY_POINT, [()])
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
    """One finding of the notes check, as the page, the command and its ``--json`` show it.

    ``error``: the snippet is kept out of review until its note is fixed; ``warning``: the card is in
    review with what torch prints now, but the note shows another output.
    """

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
    checked: int  # output cards in their notes with a final run
    unchecked: int  # those without one yet
    active: int  # output cards in review


def output_cards() -> list[tuple[Card, snippets.Snippet]]:
    """Every output card its note has now (and an active one imported before the checks), in note order."""
    in_note = Q(output_check__in_note=True) | Q(output_check__isnull=True, active=True)
    cards = (
        Card.objects.filter(in_note, kind=Card.Kind.OUTPUT)
        .select_related("note", "output_check")
        .order_by("note__slug", "position")
    )
    pairs = [(card, snippet_for(card)) for card in cards]
    return [(card, snippet) for card, snippet in pairs if snippet is not None]


def check_report() -> CheckReport:
    """The notes check from the stored runs: each snippet kept out of review, and each note that shows
    another output than torch prints (the card asks the real one)."""
    pairs = output_cards()
    found = {
        (run.card_id, run.content_hash): run for run in SnippetRun.objects.filter(card__in=[card for card, _ in pairs])
    }
    findings: list[FindingRow] = []
    checked = 0
    for card, snippet in pairs:
        run = found.get((card.pk, snippet.content_hash))
        if run is None or not run.is_final:
            continue
        checked += 1
        shown = _note_output(card, snippet)
        code = snippet.code
        judged = snippets.verdict(code, run.outcome, run.output, run.error, run.context_outcome, run.context_output)
        if not judged.qualifies:
            row = _row(card, "error", judged.problem, judged.detail, shown, judged.output)
        elif snippets.note_is_stale(shown, judged.output):
            detail = "the note shows another output; the card asks what torch prints now"
            row = _row(card, "warning", "mismatch", detail, shown, judged.output)
        else:
            continue
        findings.append(row)
    active = sum(1 for card, _ in pairs if card.active)
    return CheckReport(findings=findings, checked=checked, unchecked=len(pairs) - checked, active=active)


def _note_output(card: Card, snippet: snippets.Snippet) -> str:
    try:
        return card.output_check.note_output
    except OutputCheck.DoesNotExist:
        return snippet.shown


def _row(card: Card, severity: str, problem: str, detail: str, shown: str, real: str) -> FindingRow:
    return FindingRow(
        note=card.note.path,
        heading=card.heading_path,
        anchor=card.anchor,
        card=str(card.uuid),
        severity=severity,
        problem=problem,
        detail=detail,
        shown=shown,
        real_output=real,
    )
