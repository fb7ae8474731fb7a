"""Output cards reach review only once the sandbox vouches for them (issue 11: cards that run as shown).

The importer (``cards.importing``) writes output cards inactive and calls ``on_import`` with the cards
each changed note has now. From there:

1. ``on_import`` records which cards their notes have (``OutputCheck.in_note``) and what the notes show;
2. ``sync`` looks up each card's run (cached by what runs): a missing one is requested from the
   workers, a final one is applied;
3. ``apply`` judges the run (``snippets.verdict``): a card whose code runs alone, prints the same under
   two seeds and prints something on a CPU becomes active with what the sandbox printed as its back;
   any other is kept out of review, and the notes check lists it for the author;
4. a worker that finishes a run applies it at once (``outputs.runs.SnippetKind.on_finish``); the notes
   check (``manage.py check_notes``) runs or requests whatever is missing and applies every result.

So the cards that stop qualifying are retired by the next import or check, and come back when they
qualify again, each keeping its review history.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from cards.ingest import CardSpec
from cards.models import Card
from cards.rendering import render_markdown
from jobs import tasks
from outputs import snippets
from outputs.models import OutputCheck, SnippetRun

BACK_LANGUAGE = "text"


def snippet_for(card: Card) -> snippets.Snippet | None:
    """The runnable snippet of an output card (None for any other card, or a card without code)."""
    if card.kind != Card.Kind.OUTPUT:
        return None
    return snippets.snippet_from_card(card.front, card.back)


def current_run(card: Card, snippet: snippets.Snippet) -> SnippetRun | None:
    return SnippetRun.objects.filter(card=card, content_hash=snippet.content_hash).first()


def request_run(card: Card, snippet: snippets.Snippet) -> SnippetRun:
    """The card's run for this snippet version; a missing one is created queued and sent to a worker."""
    return tasks.request(SnippetRun, card=card, content_hash=snippet.content_hash)


def on_import(note_ids: list[int], current: list[tuple[int, CardSpec]]) -> str:
    """The importer's hook: ``current`` pairs each output card of the changed notes with its spec.

    Returns the import report's line ("" when the notes have no output card).
    """
    ids = [card_id for card_id, _ in current]
    with transaction.atomic():
        OutputCheck.objects.filter(card__note_id__in=note_ids, in_note=True).exclude(card_id__in=ids).update(
            in_note=False
        )
        existing = {check.card_id: check for check in OutputCheck.objects.filter(card_id__in=ids)}
        fresh, changed = [], []
        for card_id, spec in current:
            shown = _first_block(spec.back)
            check = existing.get(card_id)
            if check is None:
                fresh.append(OutputCheck(card_id=card_id, in_note=True, note_output=shown))
            elif not check.in_note or check.note_output != shown:
                check.in_note, check.note_output = True, shown
                changed.append(check)
        OutputCheck.objects.bulk_create(fresh)
        OutputCheck.objects.bulk_update(changed, ["in_note", "note_output"])
        counts = sync(Card.objects.filter(pk__in=ids))
    return summary(counts) if counts else ""


def summary(counts: dict[str, int]) -> str:
    waiting = counts.get(OutputCheck.State.PENDING, 0)
    line = (
        f"output cards: {counts.get(OutputCheck.State.VERIFIED, 0)} verified by the sandbox, "
        f"{counts.get(OutputCheck.State.EXCLUDED, 0)} kept out of review (see manage.py check_notes)"
    )
    return line + (f", {waiting} waiting for a sandbox run" if waiting else "")


def sync(cards: Iterable[Card]) -> dict[str, int]:
    """Apply every final run, request every missing one; the cards' states by count."""
    cards = list(cards)
    checks = _checks_for(cards)
    pairs = [(card, snippet_for(card)) for card in cards]
    found = {
        (run.card_id, run.content_hash): run for run in SnippetRun.objects.filter(card__in=[card for card, _ in pairs])
    }
    counts: dict[str, int] = {}
    for card, snippet in pairs:
        check = checks[card.pk]
        if snippet is None:
            state = _exclude(card, check, "fails", "no code block, or no output block, in the card")
        else:
            run = found.get((card.pk, snippet.content_hash))
            if run is None and check.in_note:
                run = request_run(card, snippet)
            state = apply(card, check, run) if run is not None and run.is_final else _wait(card, check)
        counts[state] = counts.get(state, 0) + 1
    return counts


def after_run(run: SnippetRun) -> None:
    """A worker (or the notes check) finished ``run``: apply it if it is still the card's current run."""
    card = Card.objects.select_related("note").get(pk=run.card_id)
    snippet = snippet_for(card)
    if snippet is None or snippet.content_hash != run.content_hash:
        return  # the card was edited since: its own run decides
    apply(card, _checks_for([card])[card.pk], run)


def apply(card: Card, check: OutputCheck, run: SnippetRun | None) -> str:
    """Make the card what its run says: active with the sandbox's output, or kept out of review."""
    code = _first_block(card.front)
    if run is None or not run.is_final:
        return _wait(card, check)
    judged = snippets.verdict(code, run.outcome, run.output, run.error, run.context_outcome, run.context_output)
    if not judged.qualifies:
        return _exclude(card, check, judged.problem, judged.detail)
    if not check.in_note:
        return _set(card, check, active=False, state=OutputCheck.State.VERIFIED)
    back = fenced(judged.output)
    if card.back != back:
        card.back, card.back_html = back, render_markdown(back)
        card.updated_at = timezone.now()
        card.save(update_fields=["back", "back_html", "updated_at"])
    return _set(card, check, active=True, state=OutputCheck.State.VERIFIED)


def fenced(output: str) -> str:
    """The card's back: what the sandbox printed, as a text block (its fence longer than any inside)."""
    longest = max((len(m.group(0)) for m in re.finditer(r"`{3,}", output)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{BACK_LANGUAGE}\n{output}\n{fence}"


def _exclude(card: Card, check: OutputCheck, problem: str, detail: str) -> str:
    return _set(card, check, active=False, state=OutputCheck.State.EXCLUDED, problem=problem, detail=detail)


def _wait(card: Card, check: OutputCheck) -> str:
    return _set(card, check, active=False, state=OutputCheck.State.PENDING)


def _set(card: Card, check: OutputCheck, *, active: bool, state: str, problem: str = "", detail: str = "") -> str:
    """Write the card's active flag and the check's state, only when they change."""
    active = active and check.in_note
    if card.active != active:
        card.active = active
        card.updated_at = timezone.now()
        card.save(update_fields=["active", "updated_at"])
    if (check.state, check.problem, check.detail) != (state, problem, detail) or check.checked_at is None:
        check.state, check.problem, check.detail = state, problem, detail[:2000]
        check.checked_at = timezone.now()
        check.save()
    return state


def _checks_for(cards: list[Card]) -> dict[int, OutputCheck]:
    """Each card's check; a card imported before checks existed is adopted (in its note while active)."""
    checks = {check.card_id: check for check in OutputCheck.objects.filter(card__in=cards)}
    missing = [
        OutputCheck(card=card, in_note=card.active, note_output=_first_block(card.back))
        for card in cards
        if card.pk not in checks
    ]
    for check in OutputCheck.objects.bulk_create(missing):
        checks[check.card_id] = check
    return checks


def _first_block(markdown: str) -> str:
    blocks = snippets.fenced_blocks(markdown)
    return blocks[0].strip("\n") if blocks else ""
