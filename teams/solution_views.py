"""The solutions page of a drill (issue 41): its accepted solutions grouped by normalised code, the team teachers'
comments on the groups, and the site-wide setting. Each view starts with ``_drill``: a drill the requester may not
read is a 404 (another team's course), as on the drill page; a comment or setting they may not make is a 404 too."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from graders.models import Drill

from . import solutions
from .forms import SolutionCommentEditForm, SolutionCommentForm


def _drill(request: HttpRequest, slug: str) -> Drill:
    drills = Drill.objects.visible_to(request.user).select_related("card__note")
    return get_object_or_404(drills, slug=slug, active=True)


@login_required
@require_GET
def drill_solutions(request: HttpRequest, drill: str) -> HttpResponse:
    found = _drill(request, drill)
    page = solutions.solutions_page(request.user, found)
    return render(request, "teams/solutions.html", {"page": page, "drill": found})


@login_required
@require_POST
def comment(request: HttpRequest, drill: str) -> HttpResponse:
    found = _drill(request, drill)
    form = SolutionCommentForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("A comment needs some text (at most 2000 characters)."))
        return redirect("teams:drill_solutions", drill=found.slug)
    data = form.cleaned_data
    try:
        made = solutions.add_comment(request.user, found, data["key"], data["team"], data["text"])
    except solutions.SolutionError as exc:
        raise Http404(_("No such group of solutions.")) from exc
    messages.success(
        request, _("Comment added: every member of “%(team)s” in this group sees it.") % {"team": made.team.name}
    )
    return redirect(f"{reverse('teams:drill_solutions', kwargs={'drill': found.slug})}#group-{data['key'][2:14]}")


@login_required
@require_POST
def edit_comment(request: HttpRequest, drill: str, comment: UUID) -> HttpResponse:
    """The author's new text; anyone else (a member, another teacher) gets a 404, as for a comment that is not."""
    found = _drill(request, drill)
    form = SolutionCommentEditForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("A comment needs some text (at most 2000 characters)."))
        return redirect("teams:drill_solutions", drill=found.slug)
    try:
        edited = solutions.edit_comment(request.user, found, comment, form.cleaned_data["text"], timezone.now())
    except solutions.SolutionError as exc:
        raise Http404(_("No such comment.")) from exc
    messages.success(request, _("Comment changed: its readers see the new text."))
    return redirect(
        f"{reverse('teams:drill_solutions', kwargs={'drill': found.slug})}#group-{edited.solution_key[2:14]}"
    )


@login_required
@require_POST
def delete_comment(request: HttpRequest, drill: str, comment: UUID) -> HttpResponse:
    found = _drill(request, drill)
    try:
        solutions.delete_comment(request.user, found, comment)
    except solutions.SolutionError as exc:
        raise Http404(_("No such comment.")) from exc
    messages.success(request, _("Comment deleted."))
    return redirect("teams:drill_solutions", drill=found.slug)


@login_required
@require_POST
def site_wide(request: HttpRequest, drill: str) -> HttpResponse:
    found = _drill(request, drill)
    public = request.POST.get("public") == "1"
    try:
        solutions.set_site_wide(request.user, found, public)
    except solutions.SolutionError as exc:
        raise Http404(_("No such drill.")) from exc
    if public:
        messages.success(request, _("Everyone who solves this drill now sees every learner's solutions."))
    else:
        messages.success(request, _("Solutions of this drill are shown within teams only."))
    return redirect("teams:drill_solutions", drill=found.slug)
