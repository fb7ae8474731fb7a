"""The answer box of ``output`` cards ("what does this print?") and the staff's notes check page.

The learner's typed answer is compared with what the snippet really printed in the sandbox (a cached
``SnippetRun``; a missing run is sent to a worker and the box polls until it is there). Right rates the
card 4, wrong 1, through ``cards.review.rate`` with ``source=output`` and the form's state version (what
``record_graded`` does, plus the version, so a double submit is recorded once). Random or context-bound
snippets are not graded (a snippet that continues an earlier block of its note is graded against a run after
that code): the box shows the note's answer and the learner rates themself as usual.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django import forms
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from cards import review as reviewing
from cards.models import Card, ReviewLog
from jobs.heartbeat import grader_status
from jobs.status import PENDING
from outputs import runs, snippets, verify
from outputs.models import SnippetRun

RIGHT_QUALITY = 4
WRONG_QUALITY = 1
POLL_SECONDS = 1


class OutputAnswerForm(forms.Form):
    answer = forms.CharField(max_length=20_000, strip=True, widget=forms.Textarea(attrs={"rows": 4}))
    version = forms.IntegerField(min_value=0)
    duration_ms = forms.IntegerField(min_value=0, required=False)


def _get_output_card(request: HttpRequest, card_uuid: UUID) -> tuple[Card, snippets.Snippet] | HttpResponse:
    """The active card the learner may see (404 otherwise) and its snippet; 400 for a card that is not an
    output card."""
    cards = Card.objects.visible_to(request.user).select_related("note")
    card = get_object_or_404(cards, uuid=card_uuid, active=True)
    snippet = verify.snippet_for(card)
    if snippet is None:
        return HttpResponseBadRequest(_("Only output cards take a typed answer."), content_type="text/plain")
    return card, snippet


@login_required
@require_POST
def answer(request: HttpRequest, card_uuid: UUID) -> HttpResponse:
    """Grade a typed answer: 1. access; 2. form; 3. the run (requested when missing); 4. compare and rate."""
    found = _get_output_card(request, card_uuid)
    if isinstance(found, HttpResponse):
        return found
    card, snippet = found
    form = OutputAnswerForm(request.POST)
    context: dict[str, Any] = {"card": card, "form": form}
    if not form.is_valid():
        return render(request, "outputs/snippets/output_answer.html", context)
    run = verify.request_run(card, snippet)
    context.update(run=run, shown=snippet.shown, poll_seconds=POLL_SECONDS)
    if not run.is_final:
        grader = grader_status(runs.SNIPPETS.queue(run))
        silent_for = grader.silent_for(timezone.now())
        context.update(pending=True, grader=grader, silent_for=silent_for)
        return render(request, "outputs/snippets/output_result.html", context)
    if not run.is_gradable:
        return render(request, "outputs/snippets/output_result.html", {**context, "gradable": False})
    typed = snippets.clean_answer(form.cleaned_data["answer"])
    right = snippets.outputs_match(run.graded_output, typed)
    rating = reviewing.RatingRequest(
        card_uuid=card.uuid,
        quality=RIGHT_QUALITY if right else WRONG_QUALITY,
        version=form.cleaned_data["version"],
        duration_ms=form.cleaned_data["duration_ms"] or 0,
        source=ReviewLog.Source.OUTPUT,
    )
    profile = reviewing.get_profile(request.user)
    now = timezone.now()
    outcome = reviewing.rate(request.user, profile, rating, now)
    if outcome is reviewing.Outcome.NOT_FOUND:
        return HttpResponse(_("No such card in your reviews."), status=404, content_type="text/plain")
    if outcome in (reviewing.Outcome.NOT_IN_QUEUE, reviewing.Outcome.NEW_LIMIT):
        return HttpResponse(outcome.message, status=409, content_type="text/plain")
    context.update(gradable=True, right=right, typed=typed, duplicate=outcome is reviewing.Outcome.DUPLICATE)
    # The review page's counts move with the rating, not only when the next card comes.
    context["snap"] = reviewing.queue_snapshot(request.user, profile, reviewing.learner_today(profile, now))
    return render(request, "outputs/snippets/output_result.html", context)


@login_required
@require_POST
def prepare(request: HttpRequest, card_uuid: UUID) -> HttpResponse:
    """Ask for the card's run while the learner is still thinking (the answer box calls it on load)."""
    found = _get_output_card(request, card_uuid)
    if isinstance(found, HttpResponse):
        return found
    verify.request_run(*found)
    return HttpResponse(status=204)


@staff_member_required
@require_http_methods(["GET", "POST"])
def notes_check(request: HttpRequest) -> HttpResponse:
    """Findings for authors from the stored runs; POST sends every missing run to a worker (each result
    then activates its card, or keeps it out of review)."""
    if request.method == "POST":
        for card, snippet in runs.output_cards():
            verify.request_run(card, snippet)
        return redirect("outputs:notes_check")
    report = runs.check_report()
    errors = [row for row in report["findings"] if row["severity"] == "error"]
    warnings = [row for row in report["findings"] if row["severity"] == "warning"]
    pending = SnippetRun.objects.filter(status__in=PENDING).count()
    context = {"report": report, "errors": errors, "warnings": warnings, "pending": pending}
    return render(request, "outputs/notes_check.html", context)
