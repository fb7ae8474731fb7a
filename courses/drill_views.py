"""A course's drill pages: the drafts and drills of a team's course, the editor (a form, or the drill file as
TOML), "Check" and its report, publishing.

Every view starts with ``_editor``: an outsider of the team gets 404 (its course and drafts do not exist for
them), a member who is not an owner or editor 403. A draft is looked up within the team's course only, so
another course's draft is a 404 for everyone here. GETs only read; the team's course is made on the first
POST that needs one. The domain is ``graders.authoring.drafts``; what runs a drill is a worker's job.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from cards.models import Course
from cards.rendering import render_markdown
from graders.authoring import drafts
from graders.authoring.document import Unfit, in_form_layout, read_document, write_drill
from graders.drills import contract
from graders.drills.schema import Drill as DrillSpec
from graders.drills.schema import DrillError
from graders.models import Drill, DrillCheck, DrillDraft, DrillRevision
from jobs.heartbeat import grader_status
from teams.models import Membership, Team

from . import services
from .drill_forms import DrillForms, drill_forms

POLL_MS = 700
# A new drill starts from this: one example, one hidden case drawn from the seed, one known-wrong solution.
STARTER = {
    "slug": "my-drill",
    "title": "",
    "entry_point": "solution",
    "starter": "import torch\n\n\ndef solution(x):\n    ...\n",
    "reference": "import torch\n\n\ndef solution(x):\n    return x\n",
    "examples": [{"name": "small", "let": {}, "args": ["torch.tensor([1.0, 2.0, 3.0])"]}],
    "hidden": [{"name": "random", "repeat": 3, "fixed": False, "let": {}, "args": ["torch.randn(5, generator=g)"]}],
}


def _editor(request: HttpRequest, team: str) -> Membership:
    """The requester's membership of the team, when they may write its course: 404 outside the team, 403 for
    a member who is not an owner or an editor."""
    membership = Membership.objects.select_related("team__course").filter(team__slug=team, user_id=request.user.pk)
    found = membership.first()
    if found is None:
        raise Http404("No such team.")
    if not found.can_edit_course:
        raise PermissionDenied("Only the team's owners and editors write its course.")
    return found


def _draft(request: HttpRequest, team: str, draft: UUID) -> tuple[Membership, DrillDraft]:
    """The draft, only when it belongs to this team's course (any other: 404, whoever asks)."""
    membership = _editor(request, team)
    course = membership.team.course
    if course is None:
        raise Http404("No such draft.")
    found = get_object_or_404(DrillDraft.objects.select_related("course"), uuid=draft, course=course)
    return membership, found


def team_course(team: Team) -> Course:
    """The team's course, made on first use by the one path that makes it (``courses.services.create_course``,
    under the team's row lock, so two first requests make one course)."""
    if team.course_id is not None:
        return team.course  # type: ignore[return-value]
    with transaction.atomic():
        locked = Team.objects.select_for_update().get(pk=team.pk)
        course = locked.course if locked.course_id is not None else services.create_course(locked)
    team.course = course
    return course  # type: ignore[return-value]


@login_required
@require_GET
def drill_list(request: HttpRequest, team: str) -> HttpResponse:
    membership = _editor(request, team)
    course = membership.team.course
    context: dict[str, Any] = {"team": membership.team, "course": course, "drafts": [], "drills": []}
    if course is not None:
        context["drafts"] = list(DrillDraft.objects.filter(course=course).order_by("-updated_at")[:200])
        context["drills"] = list(Drill.objects.of_course(course).select_related("card__note").order_by("slug"))
    return render(request, "courses/drill_list.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def drill_new(request: HttpRequest, team: str) -> HttpResponse:
    """A new drill through the form (starting from ``STARTER``); saved, it is a draft."""
    membership = _editor(request, team)
    if request.method == "POST":
        forms = drill_forms(data=request.POST)
        if forms.is_valid():
            return _create(request, membership, write_drill(forms.document), forms=forms)
    else:
        forms = drill_forms(_starter())
    return render(request, "courses/drill_new.html", {"team": membership.team, "forms": forms})


def _starter() -> dict[str, Any]:
    return read_document(write_drill(STARTER))


def _create(request: HttpRequest, membership: Membership, text: str, forms: DrillForms | None = None) -> HttpResponse:
    try:
        draft = drafts.new_draft(team_course(membership.team), request.user, text)
    except drafts.Refused as exc:
        messages.error(request, str(exc))
        if forms is not None:
            return render(request, "courses/drill_new.html", {"team": membership.team, "forms": forms}, status=400)
        return render(request, "courses/drill_toml.html", {"team": membership.team, "text": text}, status=400)
    messages.success(request, _("Draft saved."))
    return redirect("courses:drill_edit", team=membership.team.slug, draft=draft.uuid)


@login_required
@require_http_methods(["GET", "POST"])
def drill_new_toml(request: HttpRequest, team: str) -> HttpResponse:
    """A new drill pasted as a drill file (the repository's format)."""
    membership = _editor(request, team)
    if request.method == "POST":
        return _create(request, membership, _posted_text(request))
    text = write_drill(_starter())
    return render(request, "courses/drill_toml.html", {"team": membership.team, "text": text})


def _posted_text(request: HttpRequest) -> str:
    return request.POST.get("text", "").replace("\r\n", "\n").replace("\r", "\n")


@login_required
@require_http_methods(["GET", "POST"])
def drill_edit(request: HttpRequest, team: str, draft: UUID) -> HttpResponse:
    """The editor: the draft through the form, the check's report, the contract sentence and the learner's view.
    POST saves the form (its TOML, written in the form's layout) and, with "Check", asks for a check."""
    membership, found = _draft(request, team, draft)
    unfit: list[str] = []
    if request.method == "POST":
        forms = drill_forms(data=request.POST)
        if forms.is_valid():
            return _save(request, membership, found, write_drill(forms.document))
    else:
        try:
            forms = drill_forms(read_document(found.text))
        except Unfit as exc:
            forms, unfit = drill_forms(), exc.reasons
    context = {**_editor_context(membership, found), "forms": forms, "unfit": unfit}
    return render(request, "courses/drill_edit.html", context)


def _save(request: HttpRequest, membership: Membership, draft: DrillDraft, text: str) -> HttpResponse:
    try:
        drafts.save_text(draft, request.user, text)
    except drafts.Refused as exc:
        messages.error(request, str(exc))
        return redirect(request.path)
    if "check" in request.POST:
        _ask_for_check(request, draft)
    else:
        messages.success(request, _("Draft saved."))
    url = reverse("courses:drill_edit", kwargs={"team": membership.team.slug, "draft": draft.uuid})
    return redirect(f"{url}#check" if "check" in request.POST else url)


def _ask_for_check(request: HttpRequest, draft: DrillDraft) -> DrillCheck | None:
    try:
        check = drafts.request_check(draft, request.user, timezone.now())
    except drafts.Refused as exc:
        messages.error(request, str(exc))
        return None
    messages.info(request, _("Saved; a grader is checking the drill."))
    return check


@login_required
@require_http_methods(["GET", "POST"])
def drill_toml(request: HttpRequest, team: str, draft: UUID) -> HttpResponse:
    """The draft's drill file as text, saved as typed (comments and layout kept)."""
    membership, found = _draft(request, team, draft)
    if request.method == "POST":
        return _save(request, membership, found, _posted_text(request))
    context = {**_editor_context(membership, found), "text": found.text}
    return render(request, "courses/drill_toml.html", context)


@login_required
@require_POST
def drill_check(request: HttpRequest, team: str, draft: UUID) -> HttpResponse:
    """Check the saved text (the buttons beside the editors save first, then check)."""
    membership, found = _draft(request, team, draft)
    _ask_for_check(request, found)
    url = reverse("courses:drill_edit", kwargs={"team": membership.team.slug, "draft": found.uuid})
    return redirect(f"{url}#check")


@login_required
@require_GET
def drill_check_status(request: HttpRequest, team: str, draft: UUID) -> HttpResponse:
    """The check's report (htmx polls it while the check waits or runs); once final, the learner's view too."""
    membership, found = _draft(request, team, draft)
    context = _check_context(membership, found)
    if not context["polling"]:  # final: the learner's view (the examples' outputs) comes with it, out of band
        context = {**_editor_context(membership, found), "oob_preview": True}
    return render(request, "courses/snippets/drill_check.html", context)


@login_required
@require_POST
def drill_publish(request: HttpRequest, team: str, draft: UUID) -> HttpResponse:
    membership, found = _draft(request, team, draft)
    try:
        revision = drafts.publish(found, request.user, timezone.now())
    except drafts.Refused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Published version %(number)d.") % {"number": revision.number})
    return redirect("courses:drill_edit", team=membership.team.slug, draft=found.uuid)


@login_required
@require_POST
def drill_delete(request: HttpRequest, team: str, draft: UUID) -> HttpResponse:
    """Delete a draft (its checks with it); a published drill stays as it is."""
    membership, found = _draft(request, team, draft)
    found.delete()
    messages.success(request, _("Draft deleted."))
    return redirect("courses:drills", team=membership.team.slug)


@login_required
@require_POST
def drill_open(request: HttpRequest, team: str, slug: str) -> HttpResponse:
    """A draft of one of the course's published drills, to change and publish again."""
    membership = _editor(request, team)
    course = membership.team.course
    if course is None:
        raise Http404("No such drill.")
    drill = get_object_or_404(Drill.objects.of_course(course).select_related("card__note"), slug=slug)
    try:
        found = drafts.draft_for_drill(course, drill, request.user)
    except drafts.Refused as exc:
        messages.error(request, str(exc))
        return redirect("courses:drills", team=membership.team.slug)
    return redirect("courses:drill_edit", team=membership.team.slug, draft=found.uuid)


# ------------------------------------------------------------------------------------------- context


def _editor_context(membership: Membership, draft: DrillDraft) -> dict[str, Any]:
    """What the editor pages show besides the form: the text's errors, the contract sentence, the learner's
    view, the check and whether publishing is open. Read only."""
    spec, error = _parsed(draft.text)
    context: dict[str, Any] = {
        "team": membership.team,
        "draft": draft,
        "spec": spec,
        "error": error,
        "form_layout": in_form_layout(draft.text),
        **_check_context(membership, draft),
    }
    if spec is not None:
        stored = draft.course.qualified(spec.slug)
        published = Drill.objects.filter(slug=stored).first()
        context.update(
            contract={
                lang: render_markdown(text) for lang, text in contract.describe(spec.contract, spec.arg_names).items()
            },
            prompt_en=render_markdown(spec.prompt_en),
            prompt_zh=render_markdown(spec.prompt_zh),
            examples=_example_rows(spec, draft),
            published=published,
            revisions=DrillRevision.objects.filter(drill=published).count() if published is not None else 0,
        )
    return context


def _parsed(text: str) -> tuple[DrillSpec | None, str]:
    try:
        return drafts.parse(text), ""
    except DrillError as exc:
        return None, str(exc)


def _example_rows(spec: DrillSpec, draft: DrillDraft) -> list[dict[str, Any]]:
    """The examples as the drill page lists them, with the reference's output once a check of this text ran."""
    report = draft.check_report or {}
    outputs = {row["name"]: row["output"] for row in report.get("examples", [])} if draft.checked else {}
    return [
        {"name": case.name, "call": f"{spec.entry_point}({', '.join(case.args)})", "let": case.let,
         "output": outputs.get(case.name)}
        for case in spec.examples
    ]  # fmt: skip


def _check_context(membership: Membership, draft: DrillDraft) -> dict[str, Any]:
    check = drafts.latest_check(draft)
    pending = check is not None and not check.is_final
    return {
        "team": membership.team,
        "draft": draft,
        "check": check,
        "report": (check.report if check is not None and check.is_final else None),
        "check_is_current": check is not None and check.text == draft.text,
        "polling": pending,
        "poll_ms": POLL_MS,
        "grader": grader_status(settings.GRADER_QUEUE_CPU) if pending else None,
        "publish_problems": drafts.publish_problems(draft),
    }
