"""A team's course pages: the course (members), uploading notes, the import report, confirming, the export.

Every URL starts with an access helper: anyone outside the team gets 404, never 403, so a team's course stays
as private as the team; a member who is not an editor gets 403 on what only editors do. Each view asks one
use case of ``courses.services`` (or ``courses.overview`` to read) and redirects or renders one template.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from cards.models import Card
from cards.rendering import render_markdown
from teams.models import Membership

from . import folders, services
from .forms import UploadForm
from .models import Upload
from .overview import overview

RECENT_UPLOADS = 10


def _membership(request: HttpRequest, team_slug: str) -> Membership:
    """The requester's membership of the team, or 404 for anyone outside it."""
    found = Membership.objects.select_related("team__course").filter(team__slug=team_slug, user_id=request.user.pk)
    membership = found.first()
    if membership is None:
        raise Http404("No such team.")
    return membership


def _editor(request: HttpRequest, team_slug: str) -> Membership:
    """Owners and editors write the course: 403 for the other members, 404 for outsiders."""
    membership = _membership(request, team_slug)
    if not membership.can_edit_course:
        raise PermissionDenied(_("Only the team's owners and editors can change its course."))
    return membership


def _upload(membership: Membership, upload_uuid: UUID) -> Upload:
    return get_object_or_404(Upload.objects.select_related("created_by"), team=membership.team, uuid=upload_uuid)


def _page(
    request: HttpRequest, membership: Membership, form: UploadForm | None = None, problems: list[str] | None = None
) -> dict[str, Any]:
    """The course page's one context builder."""
    caps = services.Caps.from_settings()
    context: dict[str, Any] = {"overview": overview(membership), "membership": membership, "team": membership.team}
    if membership.can_edit_course:
        context["form"] = form or UploadForm(max_bytes=caps.upload_bytes)
        context["problems"] = problems or []
        context["caps"] = caps
        context["uploads"] = Upload.objects.of_team(membership.team).select_related("created_by")[:RECENT_UPLOADS]
    return context


@login_required
@require_GET
def course(request: HttpRequest, team: str) -> HttpResponse:
    membership = _membership(request, team)
    return render(request, "courses/course.html", _page(request, membership))


@login_required
@require_POST
def upload(request: HttpRequest, team: str) -> HttpResponse:
    """Steps: 1. the form (sizes); 2. ``services.gather`` (zips unpacked, defended); 3. ``services.preview``
    (checked, planned, kept); 4. the import report. A refusal re-renders the page with every problem."""
    membership = _editor(request, team)
    caps = services.Caps.from_settings()
    form = UploadForm(request.POST, request.FILES, max_bytes=caps.upload_bytes)
    if not form.is_valid():
        return render(request, "courses/course.html", _page(request, membership, form), status=400)
    try:
        incoming = services.gather(form.uploads(), caps)
        kept = services.preview(membership.team, request.user, incoming, caps)
    except services.CourseError as exc:
        return render(request, "courses/course.html", _page(request, membership, form, exc.problems), status=400)
    return redirect("courses:upload_detail", team=team, upload=kept.uuid)


@login_required
@require_GET
def upload_detail(request: HttpRequest, team: str, upload: UUID) -> HttpResponse:
    """The import report: per note, the cards to create, change and retire, a few cards of each kind."""
    membership = _editor(request, team)
    kept = _upload(membership, upload)
    context = {
        "team": membership.team,
        "upload": kept,
        "report": kept.report,
        "notes": [_note_view(entry) for entry in kept.report.get("notes", [])],
        "expired": kept.is_expired(),
        "now": timezone.now(),
    }
    return render(request, "courses/upload.html", context)


def _note_view(entry: dict[str, Any]) -> dict[str, Any]:
    """A report entry with its preview cards rendered as the review page renders a card (sanitised)."""
    labels = dict(Card.Kind.choices)
    previews = [
        {
            **card,
            "label": labels.get(card["kind"], card["kind"]),
            "front_html": render_markdown(card["front"]),
            "back_html": render_markdown(card["back"]),
        }
        for card in entry.get("previews", [])
    ]
    kinds = [(labels.get(kind, kind), n) for kind, n in entry.get("kinds", {}).items()]
    changed = sorted({*entry["updated"], *entry["moved"], *entry["reactivated"]})
    return {**entry, "preview_cards": previews, "kind_counts": kinds, "changed": changed}


@login_required
@require_POST
def confirm(request: HttpRequest, team: str, upload: UUID) -> HttpResponse:
    membership = _editor(request, team)
    kept = _upload(membership, upload)
    try:
        done = services.confirm(kept, request.user)
    except services.CourseChanged as exc:
        messages.warning(request, str(exc))
        return redirect("courses:upload_detail", team=team, upload=kept.uuid)
    except services.CourseError as exc:
        messages.error(request, " ".join(exc.problems))
        return redirect("courses:upload_detail", team=team, upload=kept.uuid)
    notes = len(done.reports)
    counts = {
        "notes": notes,
        "created": sum(len(r.created) for r in done.reports),
        "changed": sum(len({*r.updated, *r.moved, *r.reactivated}) for r in done.reports),
        "retired": sum(len(r.retired) for r in done.reports),
    }
    text = ngettext(
        "Imported %(notes)d note into the course: %(created)d new cards, %(changed)d changed, "
        "%(retired)d retired.",
        "Imported %(notes)d notes into the course: %(created)d new cards, %(changed)d changed, "
        "%(retired)d retired.",
        notes,
    ) % counts  # fmt: skip
    waiting = any("waiting for a sandbox run" in line for line in done.verified)
    if waiting:
        text += " " + _("Output cards enter review once the sandbox has run their code.")
    messages.success(request, text)
    return redirect("courses:course", team=team)


@login_required
@require_POST
def discard(request: HttpRequest, team: str, upload: UUID) -> HttpResponse:
    membership = _editor(request, team)
    services.discard(_upload(membership, upload))
    messages.info(request, _("Upload discarded; nothing was imported."))
    return redirect("courses:course", team=team)


@login_required
@require_GET
def export(request: HttpRequest, team: str) -> HttpResponse:
    """The course as a zip of its folder (``import_course`` reads it back)."""
    membership = _editor(request, team)
    course = folders.team_course(membership.team)
    if course is None:
        raise Http404("This team has no course yet.")
    name = f"{course.slug}-{timezone.now():%Y%m%d}"
    response = HttpResponse(folders.zip_bytes(course, course.slug), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{name}.zip"'
    return response
