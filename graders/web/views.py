"""The drill page, submissions and their live verdicts, history, hints, reference, give up and move on.

Each view: decorators, an access helper (a learner only ever sees their own submissions: 404
otherwise), a form, one call into ``graders.attempts.actions`` (the use-case layer the API calls too), then a
redirect or one template rendered from the read model it answers. With JavaScript the submit request waits for
the verdict (a bounded time, ``graders.attempts.submissions.wait_for_verdict``) and answers with it; a verdict
not ready by then polls itself every 300 ms (htmx). Without JavaScript the submission page refreshes itself
until the verdict is final. "Run on your own input" (``run_input``) follows the same shape with its own job
(``graders.attempts.runs``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from cards.rendering import render_markdown
from cards.review import get_profile, learner_today
from graders import extensions
from graders.attempts import actions, runs, submissions
from graders.drills import contract
from graders.drills.schema import Drill as DrillSpec
from graders.kinds import examples
from graders.kinds.counterexamples import COUNTEREXAMPLES
from graders.models import Counterexample, Difficulty, Drill, DrillExamples, DrillRun, Submission
from graders.rating.progress import DrillStatus
from graders.web import hub as drill_hub
from graders.web.forms import RunForm, SubmissionForm
from jobs.heartbeat import grader_status
from jobs.labels import STATUS_LABELS
from jobs.status import Status

POLL_MS = 300
# While no grader is alive the pending fragment polls this slowly: nothing changes until one is back.
OFFLINE_POLL_MS = 3000
HISTORY_ROWS = 50
# How long the drill page waits (polls) for a worker to compute the examples' expected outputs.
EXAMPLES_WAIT = timedelta(minutes=2)
EXAMPLES_POLL_MS = 500


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _get_drill(request: HttpRequest, slug: str) -> Drill:
    """An active drill of a course the learner may read (the bundled course's: everyone's); else 404."""
    drills = Drill.objects.visible_to(request.user).select_related("card__note")
    return get_object_or_404(drills, slug=slug, active=True)


def _get_submission(request: HttpRequest, submission_uuid: UUID) -> Submission:
    """Only the learner's own submissions exist for them: anyone else's is a 404, never a 403."""
    return get_object_or_404(
        Submission.objects.select_related("drill__card__note"), uuid=submission_uuid, user=request.user
    )


def _drill_context(request: HttpRequest, drill: Drill, form: SubmissionForm | None = None) -> dict[str, Any]:
    """The drill page's one context builder: the domain is read once (``actions.page``), nothing written."""
    spec = drill.spec
    page = actions.page(request.user, drill)
    last = page.last
    if form is None:
        # The editor keeps the learner's last code, from this review or any earlier one (the browser adds its draft).
        code = last.code if last is not None else (drill.starter_code or f"def {drill.entry_point}():\n    ...\n")
        form = SubmissionForm(initial={"code": code}, max_bytes=submissions.code_limit(drill))
    status = _status_context(page.latest) if page.latest is not None else {}
    return {
        "poll_ms": POLL_MS,
        **_examples_context(drill, spec, examples.stored_outputs(drill)),
        **status,
        "drill": drill,
        "spec": spec,
        "card": drill.card,
        "review": page.review,
        "state": page.summary.state,
        "progress": page.summary.progress,
        "latest": page.latest.submission if page.latest is not None else None,
        "last_sent_at": last.queued_at if last is not None else None,
        "form": form,
        "prompt_zh": render_markdown(drill.prompt_zh),
        "prompt_en": render_markdown(drill.prompt_en),
        "contract": _contract_sentences(spec),
        **_hints_context(page.hints),
        "reference_available": page.summary.reference_available,
        "summary": page.summary,
        "rate_limit": submissions.RateLimit.from_settings(),
        "run_rate_limit": runs.run_rate_limit(),
        "drill_parts": extensions.drill_parts(request.user, drill),
    }


def _hints_context(hints: actions.Hints) -> dict[str, Any]:
    """The hints the learner sees and what opening the next one would cost."""
    return {
        "hints_opened": hints.shown,
        "hints_total": hints.total,
        "next_hint": hints.next_hint,
        "next_hint_cap": hints.next_hint_cap,
    }


def _contract_sentences(spec: DrillSpec) -> dict[str, str]:
    """The drill's behaviour contract in one sentence per language, as HTML."""
    return {lang: render_markdown(text) for lang, text in contract.describe(spec.contract, spec.arg_names).items()}


@dataclass(frozen=True)
class ExampleRow:
    name: str
    call: str
    let: tuple[tuple[str, str], ...]
    output: str | None


def _examples_context(drill: Drill, spec: DrillSpec, row: DrillExamples | None) -> dict[str, Any]:
    """The examples as calls, with the reference's outputs once a worker has computed them. No row yet
    (a drill imported before the import asked for them): the block asks by a POST when it loads."""
    outputs = {item["name"]: item["output"] for item in (row.outputs if row is not None else None) or []}
    rows = [
        ExampleRow(case.name, f"{drill.entry_point}({', '.join(case.args)})", case.let, outputs.get(case.name))
        for case in spec.examples
    ]
    waiting = row is not None and not row.is_final and timezone.now() - row.queued_at < EXAMPLES_WAIT
    return {"examples": rows, "examples_row": row, "examples_polling": waiting, "examples_ask": row is None}


@login_required
@require_http_methods(["GET", "POST"])
def examples_fragment(request: HttpRequest, slug: str) -> HttpResponse:
    """The examples list: GET reads (htmx polls it until the outputs arrive); POST first asks a worker for
    the outputs of a drill that has no row yet (one computation per drill version, however many ask)."""
    drill = _get_drill(request, slug)
    row = examples.example_outputs(drill) if request.method == "POST" else examples.stored_outputs(drill)
    context = {"drill": drill, "spec": drill.spec, **_examples_context(drill, drill.spec, row)}
    return render(request, "graders/snippets/examples.html", context)


@login_required
@require_GET
def hub(request: HttpRequest) -> HttpResponse:
    """Every drill with the learner's standing; filters are a GET form, so it works without JavaScript."""
    filters = drill_hub.HubFilters.from_query(request.GET.dict())
    today = learner_today(get_profile(request.user), timezone.now())
    context = {
        "hub": drill_hub.build_hub(request.user, today, filters),
        "filters": filters,
        "statuses": [(status.value, status.label) for status in DrillStatus],
        "difficulties": Difficulty.choices,
    }
    return render(request, "graders/hub.html", context)


@login_required
@require_GET
def drill_page(request: HttpRequest, slug: str) -> HttpResponse:
    drill = _get_drill(request, slug)
    return render(request, "graders/drill.html", _drill_context(request, drill))


@login_required
@require_GET
def drill_for_card(request: HttpRequest, card_uuid: UUID) -> HttpResponse:
    """The review page links drill cards by card uuid (no extra query there); this finds the drill."""
    drill = get_object_or_404(Drill.objects.visible_to(request.user), card__uuid=card_uuid, active=True)
    return redirect("graders:drill", slug=drill.slug)  # another course's drill: 404 here, its slug never shown


@login_required
@require_POST
def submit(request: HttpRequest, slug: str) -> HttpResponse:
    """Steps: 1. the form  2. ``actions.submit`` (size, rate limit, review seed, store, enqueue; with htmx the
    bounded wait for the verdict, and the verdict read back)."""
    drill = _get_drill(request, slug)
    form = SubmissionForm(request.POST, max_bytes=submissions.code_limit(drill))
    if not form.is_valid():
        return _refuse(request, drill, form, form.errors.get("code") or form.errors.as_text(), status=400)
    htmx = _is_htmx(request)
    data = form.cleaned_data
    done = actions.submit(request.user, drill, data["code"], data["kind"], wait=htmx, read_back=htmx)
    if isinstance(done, submissions.Refused):
        response = _refuse(request, drill, form, [done.message], status=done.status)
        if done.retry_after:
            response["Retry-After"] = str(done.retry_after)
        return response
    if done.status is not None:
        context = {**_status_context(done.status), "oob": True}
        return render(request, "graders/snippets/submission_status.html", context)
    return redirect("graders:submission", submission_uuid=done.submission.uuid)


def _refuse(request: HttpRequest, drill: Drill, form: SubmissionForm, errors: Any, *, status: int) -> HttpResponse:
    """A refused submission writes nothing: htmx gets the message in the verdict slot, a plain post the page."""
    if _is_htmx(request):
        # htmx swaps only 2xx answers by default; the message is the content here, not a failure page.
        return render(request, "graders/snippets/refused.html", {"errors": list(errors)})
    context = _drill_context(request, drill, form)
    context["refused"] = list(errors)
    return render(request, "graders/drill.html", context, status=status)


def _get_run(request: HttpRequest, run_uuid: UUID) -> DrillRun:
    """Only the learner's own runs exist for them: anyone else's is a 404."""
    return get_object_or_404(DrillRun.objects.select_related("drill"), uuid=run_uuid, user=request.user)


@login_required
@require_POST
def run_input(request: HttpRequest, slug: str) -> HttpResponse:
    """ "Run" on the learner's own arguments. Steps: 1. the form (the arguments checked against the case language,
    nothing evaluated here)  2. ``graders.attempts.runs.request_run`` (rate limit, store, enqueue)."""
    drill = _get_drill(request, slug)
    form = RunForm(request.POST, max_bytes=submissions.code_limit(drill))
    if not form.is_valid():
        errors = [error for field in ("code", "arguments") for error in form.errors.get(field, [])]
        return _refuse_run(request, drill, form, errors, status=400)
    run = runs.request_run(request.user, drill, form.cleaned_data["code"], form.cleaned_data["arguments"])
    if isinstance(run, submissions.Refused):
        response = _refuse_run(request, drill, form, [run.message], status=run.status)
        if run.retry_after:
            response["Retry-After"] = str(run.retry_after)
        return response
    if _is_htmx(request):
        run = runs.wait_for_run(run)
        return render(request, "graders/snippets/run_status.html", _run_context(run))
    return redirect("graders:run", run_uuid=run.uuid)


def _refuse_run(request: HttpRequest, drill: Drill, form: RunForm, errors: list[str], *, status: int) -> HttpResponse:
    """A refused run writes nothing: htmx gets the message in the run slot, a plain post the page (the form open,
    the code and arguments as sent)."""
    if _is_htmx(request):
        return render(request, "graders/snippets/refused.html", {"errors": errors})
    context = _drill_context(request, drill, form)
    context.update(run_form=form, run_refused=errors)
    return render(request, "graders/drill.html", context, status=status)


def _run_context(run: DrillRun) -> dict[str, Any]:
    """What the run fragment needs; it polls while pending, like a verdict."""
    grader = None if run.is_final else grader_status(run.drill.queue)
    report = run.result or {}
    learner_status = report.get("status") or ""
    return {
        "run": run,
        "report": report,
        "learner_status": STATUS_LABELS.get(learner_status, learner_status),  # type: ignore[call-overload]
        "polling": not run.is_final,
        "poll_ms": OFFLINE_POLL_MS if grader is not None and grader.offline else POLL_MS,
        "grader": grader,
        "silent_for": grader.silent_for(timezone.now()) if grader is not None else "",
    }


@login_required
@require_GET
def run_status(request: HttpRequest, run_uuid: UUID) -> HttpResponse:
    """The htmx fragment of a run: queued, running, then both outputs."""
    return render(request, "graders/snippets/run_status.html", _run_context(_get_run(request, run_uuid)))


@login_required
@require_GET
def run_page(request: HttpRequest, run_uuid: UUID) -> HttpResponse:
    """Without JavaScript: the page refreshes itself until the run is final."""
    run = _get_run(request, run_uuid)
    return render(request, "graders/run.html", {**_run_context(run), "drill": run.drill})


def _status_context(status: actions.AttemptStatus) -> dict[str, Any]:
    """What the verdict fragment needs; it polls while pending (slowly, saying so, while no grader is alive).

    The drill card is rated in the verdict's own transaction, so a final verdict is shown with its rating.
    """
    sub = status.submission
    grader = None if sub.is_final else grader_status(sub.drill.queue)
    verdict = sub.verdict or {}
    tests = verdict.get("tests", [])
    failing = [test for test in tests if not test["passed"]]
    return {
        "sub": sub,
        "verdict": verdict,
        "tests": tests,
        "mismatch": verdict.get("mismatch"),
        # The mismatch describes the first failing test (always a visible one: hidden ones have none).
        "mismatch_test": failing[0]["name"] if failing else "",
        # Tests carry their own messages, unless the whole run failed (a limit: every test says just that).
        "per_test": any(test["message"] not in (sub.status, "passed") for test in tests),
        "summary": status.summary,
        "polling": not sub.is_final,
        "poll_ms": OFFLINE_POLL_MS if grader is not None and grader.offline else POLL_MS,
        "grader": grader,
        "silent_for": grader.silent_for(timezone.now()) if grader is not None else "",
        "move_on_quality": status.summary.move_on_quality,
        # The hints the review opened (those it was rated with), never the ones a rated review shows for free.
        "verdict_hints": status.verdict_hints,
        # An acceptance opens what solving opens (others' solutions): the drill page's parts, swapped in with it.
        "drill_parts": extensions.drill_parts(sub.user, sub.drill)
        if sub.status == Status.ACCEPTED and sub.is_attempt
        else (),
        "counterexample": _counterexample(sub),
    }


def _counterexample(sub: Submission) -> Counterexample | None:
    """The counterexample job of a final attempt that failed (``graders.kinds.counterexamples`` queues one only
    where the examples passed and a hidden case did not); None otherwise, without a query for the others."""
    if not (sub.is_final and sub.is_attempt and sub.status != Status.ACCEPTED):
        return None
    found = Counterexample.objects.filter(submission=sub).first()
    if found is not None:
        found.submission = sub
    return found


def _counterexample_context(cex: Counterexample) -> dict[str, Any]:
    """While the search waits, whether a worker consumes its queue (its own: a stopped counterexample worker
    must not read as "looking" for ever)."""
    result = cex.result or {}
    grader = None if cex.is_final else grader_status(COUNTEREXAMPLES.queue(cex))
    offline = grader is not None and grader.offline
    return {
        "cex": cex,
        "poll_ms": OFFLINE_POLL_MS if offline else POLL_MS,
        "search_ms": round(float(result.get("search_ms") or 0)),
        "offline": offline,
        "silent_for": grader.silent_for(timezone.now()) if offline and grader is not None else "",
    }


@login_required
@require_GET
def submission_counterexample(request: HttpRequest, submission_uuid: UUID) -> HttpResponse:
    """The htmx fragment of a verdict's counterexample: searching, then the input found or that none was."""
    sub = _get_submission(request, submission_uuid)
    cex = _counterexample(sub)
    if cex is None:
        raise Http404("no counterexample for this submission")
    return render(request, "graders/snippets/counterexample.html", _counterexample_context(cex))


@login_required
@require_GET
def submission_status(request: HttpRequest, submission_uuid: UUID) -> HttpResponse:
    """The htmx fragment: queued, running, then the verdict (and, once rated, the next due day)."""
    status = actions.status(request.user, _get_submission(request, submission_uuid))
    context = {**_status_context(status), "oob": _is_htmx(request)}
    return render(request, "graders/snippets/submission_status.html", context)


@login_required
@require_GET
def submission_page(request: HttpRequest, submission_uuid: UUID) -> HttpResponse:
    """Without JavaScript: the page refreshes itself (meta refresh) until the verdict is final."""
    status = actions.status(request.user, _get_submission(request, submission_uuid))
    context = {**_status_context(status), "drill": status.submission.drill}
    return render(request, "graders/submission.html", context)


@dataclass(frozen=True)
class HistoryRow:
    sub: Submission
    diff: list[tuple[str, str]]  # (css class, line), escaped by the template


def code_diff(before: str, after: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line) pairs: the template escapes each line, so code never becomes HTML."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), "previous", "this attempt", lineterm="")
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    return [(kinds.get(line[:1], "ctx"), line) for line in lines if not line.startswith(("+++", "---"))]


@login_required
@require_GET
def history(request: HttpRequest, slug: str) -> HttpResponse:
    drill = _get_drill(request, slug)
    subs = list(Submission.objects.history(request.user.pk, drill.pk)[:HISTORY_ROWS])
    rows = []
    for index, sub in enumerate(subs):
        previous = subs[index + 1] if index + 1 < len(subs) else None
        rows.append(HistoryRow(sub, code_diff(previous.code, sub.code) if previous is not None else []))
    return render(request, "graders/history.html", {"drill": drill, "rows": rows})


@login_required
@require_POST
def reference(request: HttpRequest, slug: str) -> HttpResponse:
    """Show the reference once it is unlocked; after the first look an acceptance is a failed recall (2)."""
    if not actions.view_reference(request.user, _get_drill(request, slug)):
        messages.error(request, _("The reference unlocks after an accepted submission or three failed ones."))
        return redirect("graders:drill", slug=slug)
    return redirect(f"{reverse('graders:drill', kwargs={'slug': slug})}#reference")


@login_required
@require_POST
def hint(request: HttpRequest, slug: str) -> HttpResponse:
    """Open the review's next hint; recorded on the review, it caps an acceptance (1 hint: 4, 2 or more: 3)."""
    drill = _get_drill(request, slug)
    hints = actions.open_hint(request.user, drill)
    if _is_htmx(request):
        context = {"drill": drill, **_hints_context(hints)}
        return render(request, "graders/snippets/hints.html", context)
    return redirect(f"{reverse('graders:drill', kwargs={'slug': slug})}#hints")


@login_required
@require_POST
def give_up(request: HttpRequest, slug: str) -> HttpResponse:
    if actions.give_up(request.user, _get_drill(request, slug)) is None:
        messages.info(request, _("This drill was already rated."))
    else:
        messages.info(request, _("Gave up: rated 0. The drill comes back later today with new hidden cases."))
    return redirect("cards:review")


@login_required
@require_POST
def move_on(request: HttpRequest, slug: str) -> HttpResponse:
    """End a failing review with its last verdict's quality and go to the next card."""
    ended = actions.move_on(request.user, _get_drill(request, slug))
    if ended is None:
        messages.info(request, _("Nothing to rate: submit an answer first, or give up."))
        return redirect("graders:drill", slug=slug)
    messages.info(
        request, _("Moved on: rated %(quality)s. The drill comes back later today.") % {"quality": ended.quality}
    )
    return redirect("cards:review")
