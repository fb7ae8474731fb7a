"""Web views for the daily review, the dashboard, settings and sign-up.

Each view: decorators, an access helper or a form, one call into ``cards.review``, then a
redirect or one template. Review actions answer htmx requests with the next card's panel
(no page reload) and plain form posts with a redirect, so everything works without JavaScript.
"""

from __future__ import annotations

import hashlib
import zoneinfo
from datetime import timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone, translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views import i18n
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from fsrs.scheduler import DEFAULT_PARAMETERS

from cards import charts, extensions, fit_text, optimising, switching, tasks
from cards import review as reviewing
from cards.forms import CardNoteForm, CardTextForm, RatingForm, SettingsForm, SignupForm, SwitchSchedulerForm
from cards.models import Card, CardState, Language, Note, Optimisation, Profile, Scheduler
from cards.notefixes import corrections_for
from cards.rendering import render_markdown, render_note
from cards.scheduling.fitting import MIN_REVIEWS
from quizsite import throttle


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _get_card(request: HttpRequest, card_uuid: UUID) -> Card:
    """Cards are shared by all learners (a private Anki import aside), so a signed-in user may act on an active one."""
    cards = Card.objects.visible_to(request.user).select_related("note")
    return get_object_or_404(cards, uuid=card_uuid, active=True)


def _review_context(item: reviewing.ReviewItem | None, snap: reviewing.QueueSnapshot) -> dict[str, Any]:
    """The card's kind may bring its own part (cards.extensions): a drill's editor link, an output's answer box."""
    return {"item": item, "snap": snap, "part": extensions.review_part(item.card.kind) if item else None}


def _next_panel(request: HttpRequest) -> HttpResponse:
    """After an action: the next card's panel for htmx, a redirect (POST/redirect/GET) otherwise."""
    if not _is_htmx(request):
        return redirect("cards:review")
    profile = reviewing.get_profile(request.user)
    item, snap = reviewing.next_card(request.user, profile, timezone.now())
    return render(request, "cards/snippets/review_panel.html", _review_context(item, snap))


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    profile = reviewing.get_profile(request.user)
    summary = reviewing.dashboard_summary(request.user, profile, timezone.now())
    peak = max([day["count"] for day in summary.forecast] + [1])
    return render(request, "cards/dashboard.html", {"summary": summary, "peak": peak, "profile": profile})


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Keeps ``next`` like the login page does, so an invite link opened while signed out still lands."""
    next_url = _safe_next(request)
    if request.user.is_authenticated:
        return redirect(next_url or "cards:dashboard")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        chosen = request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME, "")
        if chosen and chosen in Language.values:  # switched in the header before signing up: keep it
            Profile.objects.filter(user=user).update(language=chosen)
        login(request, user, backend="cards.backends.ProfileBackend")
        return redirect(next_url or "cards:dashboard")
    context = {"form": form, "next": next_url, "login_notes": extensions.login_notes(next_url)}
    return render(request, "registration/signup.html", context)


def _safe_next(request: HttpRequest) -> str:
    """The ``next`` address when it stays on this site, else "" (never an open redirect)."""
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    allowed = url_has_allowed_host_and_scheme(candidate, {request.get_host()}, require_https=request.is_secure())
    return candidate if candidate and allowed else ""


def _remember_language(response: HttpResponse, code: str) -> HttpResponse:
    """The language cookie LocaleMiddleware reads, as Django's set_language writes it; "" forgets it, so the
    browser's Accept-Language decides again."""
    if not code:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME, path=settings.LANGUAGE_COOKIE_PATH)
        return response
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        code,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )
    return response


@require_POST
def set_language(request: HttpRequest) -> HttpResponse:
    """The header's language switch: Django's ``set_language`` (the cookie, the way back to the page), and for
    a signed-in learner the choice kept on their profile, so their next login on any browser restores it."""
    response = i18n.set_language(request)
    code = request.POST.get("language", "")
    if request.user.is_authenticated and code in Language.values and code:
        profile = reviewing.get_profile(request.user)
        profile.language = code
        profile.save(update_fields=["language"])
    return response


class LoginView(throttle.LoginView):
    """The login page (failures throttled: ``quizsite.throttle``), plus the learner's stored language: a new
    browser speaks it from the first page."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["login_notes"] = extensions.login_notes(context.get("next") or "")
        return context

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        code = Profile.objects.filter(user=form.get_user()).values_list("language", flat=True).first()
        return _remember_language(response, code) if code else response


@login_required
@require_GET
def review(request: HttpRequest) -> HttpResponse:
    profile = reviewing.get_profile(request.user)
    item, snap = reviewing.next_card(request.user, profile, timezone.now())
    return render(request, "cards/review.html", _review_context(item, snap))


@login_required
@require_POST
def rate(request: HttpRequest, card_uuid: UUID) -> HttpResponse:
    form = RatingForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(
            _("Invalid rating: %(errors)s") % {"errors": form.errors.as_text()}, content_type="text/plain"
        )
    rating = reviewing.RatingRequest(
        card_uuid=card_uuid,
        quality=form.cleaned_data["quality"],
        version=form.cleaned_data["version"],
        duration_ms=form.cleaned_data["duration_ms"],
    )
    outcome = reviewing.rate(request.user, reviewing.get_profile(request.user), rating, timezone.now())
    if outcome is reviewing.Outcome.NOT_FOUND:
        return HttpResponse(_("No such card in your reviews."), status=404, content_type="text/plain")
    if outcome in (reviewing.Outcome.NOT_IN_QUEUE, reviewing.Outcome.NEW_LIMIT):
        return HttpResponse(outcome.message, status=409, content_type="text/plain")
    if outcome is reviewing.Outcome.DUPLICATE:
        messages.info(request, _("That card was already rated; here is the next one."))
    return _next_panel(request)


@login_required
@require_POST
def undo(request: HttpRequest) -> HttpResponse:
    card = reviewing.undo_last(request.user, reviewing.get_profile(request.user), timezone.now())
    if card is None:
        messages.info(request, _("Nothing to undo."))
    else:
        messages.success(request, _("Undid the last rating."))
    return _next_panel(request)


@login_required
@require_POST
def suspend(request: HttpRequest, card_uuid: UUID) -> HttpResponse:
    card = _get_card(request, card_uuid)
    reviewing.suspend(request.user, reviewing.get_profile(request.user), card, timezone.now())
    messages.success(request, _("Card suspended. Unsuspend it from its edit page."))
    return _next_panel(request)


@login_required
@require_POST
def bury(request: HttpRequest, card_uuid: UUID) -> HttpResponse:
    card = _get_card(request, card_uuid)
    reviewing.bury(request.user, reviewing.get_profile(request.user), card, timezone.now())
    messages.success(request, _("Card buried until tomorrow."))
    return _next_panel(request)


@login_required
@require_http_methods(["GET", "POST"])
def card_edit(request: HttpRequest, card_uuid: UUID) -> HttpResponse:
    card = _get_card(request, card_uuid)
    state = CardState.objects.filter(user=request.user, card=card).first()
    form = CardNoteForm(request.POST or None, instance=state)
    own = card.note.owner_id == request.user.pk  # a private import: the learner's to correct
    text_form = (
        CardTextForm(request.POST or None, initial={"front": card.front, "back": card.back}, prefix="card")
        if own
        else None
    )
    if request.method == "POST" and form.is_valid() and (text_form is None or text_form.is_valid()):
        if text_form is not None and text_form.has_changed():
            _save_card_text(card, text_form.cleaned_data["front"], text_form.cleaned_data["back"])
        profile = reviewing.get_profile(request.user)
        reviewing.save_card_note(
            request.user, profile, card, form.cleaned_data["user_note"], form.cleaned_data["suspended"]
        )
        messages.success(request, _("Saved."))
        return redirect("cards:review")
    return render(request, "cards/card_edit.html", {"card": card, "form": form, "text_form": text_form})


def _save_card_text(card: Card, front: str, back: str) -> None:
    """A private card's corrected faces, rendered as an imported CSV's are (Markdown, sanitised)."""
    card.front, card.back = front.strip(), back.strip()
    card.front_html, card.back_html = render_markdown(card.front), render_markdown(card.back)
    card.content_hash = hashlib.sha256(f"{card.front}\0{card.back}".encode()).hexdigest()
    card.save(update_fields=["front", "back", "front_html", "back_html", "content_hash", "updated_at"])


@login_required
@require_http_methods(["GET", "POST"])
def settings_view(request: HttpRequest) -> HttpResponse:
    profile = reviewing.get_profile(request.user)
    form = SettingsForm(request.POST or None, instance=profile, initial={"email": request.user.email})
    if request.method == "POST" and form.is_valid():
        form.save()
        chosen = form.cleaned_data["language"] if "language" in form.changed_data else ""
        with translation.override(chosen or translation.get_language()):  # said in the language just chosen
            messages.success(request, _("Settings saved."))
        response = redirect("cards:settings")
        if "language" in form.changed_data:
            _remember_language(response, chosen)
        return response
    zones = sorted(zoneinfo.available_timezones())
    other = Scheduler.SM2 if profile.scheduler == Scheduler.FSRS else Scheduler.FSRS
    optimisation = Optimisation.objects.filter(user=request.user).order_by("-created_at").first()
    fitted = optimisation.parameters if optimisation and optimisation.parameters else None
    context = {
        "form": form,
        "zones": zones,
        "profile": profile,
        "other": other,
        "other_label": Scheduler(other).label,
        "optimisation": optimisation,
        "optimisation_message": fit_text.translate(optimisation.message) if optimisation else "",
        "min_reviews": MIN_REVIEWS,
        "fit_reviews": optimising.scored_count(request.user.pk),
        "parameter_rows": (
            parameter_rows(profile.fsrs_parameters, fitted, optimisation.parameters_before)
            if optimisation and fitted
            else []
        ),
    }
    return render(request, "cards/settings.html", context)


def parameter_rows(
    in_use: list[float] | None, fitted: list[float], before: list[float] | None = None
) -> list[dict[str, Any]]:
    """Each FSRS-6 parameter: the package's default, the one the last fit was compared against (``before``, in
    use when it ran), what the fit produced, the change from before to after, and the one in use now.

    Fits recorded before ``Optimisation.parameters_before`` existed: the one in use stands for before, or the
    default when the fit was kept (then the two are the same)."""
    current = list(in_use) if in_use else list(DEFAULT_PARAMETERS)
    rows = []
    for index, (default, used, new) in enumerate(zip(DEFAULT_PARAMETERS, current, fitted, strict=False)):
        if before is not None and index < len(before):
            base = before[index]
        else:
            base = default if used == new else used
        rows.append(
            {"name": f"w{index}", "default": default, "before": base, "fitted": new, "change": new - base,
             "in_use": used}
        )  # fmt: skip
    return rows


@login_required
@require_POST
def optimise(request: HttpRequest) -> HttpResponse:
    """Fit the learner's FSRS parameters now, on the scoring worker; the settings page shows the outcome.
    Refused while a fit is active or cooling down (``cards.optimising.request``), saying until when."""
    outcome = tasks.request_fit_now(request.user, timezone.now())
    if isinstance(outcome, Optimisation):
        messages.success(request, _("Fitting your parameters on the worker; reload this page in a minute."))
        have = optimising.scored_count(request.user.pk)
        if have < MIN_REVIEWS:
            messages.info(
                request,
                _(
                    "Only %(have)d of your reviews count towards a fit, which needs %(needed)d: it will keep the "
                    "default parameters."
                )
                % {"have": have, "needed": MIN_REVIEWS},
            )
    else:
        messages.info(request, outcome.message(reviewing.get_profile(request.user).zone))
    return redirect("cards:settings")


@login_required
@require_GET
def workload(request: HttpRequest) -> HttpResponse:
    """Anki's "help me decide": reviews a day at each desired retention, simulated on the learner's cards."""
    profile = reviewing.get_profile(request.user)
    now = timezone.now()
    rows = switching.workload_preview(request.user, profile, now)
    today = reviewing.learner_today(profile, now)
    days = [(today + timedelta(days=offset)).strftime("%d %b") for offset in range(len(rows[0].per_day))]
    series = [
        charts.Series(f"{row.retention:.2f}", [charts.Point(day, n) for day, n in zip(days, row.per_day, strict=True)])
        for row in rows
    ]
    chart = charts.line_chart(series, chart_id="workload", title=_("Reviews a day at each desired retention"))
    return render(request, "cards/workload.html", {"rows": rows, "profile": profile, "chart": chart})


@login_required
@require_http_methods(["GET", "POST"])
def switch_scheduler(request: HttpRequest) -> HttpResponse:
    """GET shows what the switch would do (the backlog and how it is spread); POST does exactly that."""
    profile = reviewing.get_profile(request.user)
    form = SwitchSchedulerForm(request.POST or request.GET or None)
    if not form.is_valid():
        return HttpResponseBadRequest(_("Choose a scheduler: ?to=sm2 or ?to=fsrs."), content_type="text/plain")
    target = form.cleaned_data["to"]
    if request.method == "POST":
        plan = switching.switch_scheduler(request.user, profile, target, timezone.now())
        switched = _("Switched to %(scheduler)s.") % {"scheduler": Scheduler(target).label}
        if plan.backlog:
            spread = ngettext(
                "%(n)d newly due card is spread over the next days.",
                "%(n)d newly due cards are spread over the next days.",
                plan.backlog,
            ) % {"n": plan.backlog}
            switched = f"{switched} {spread}"
        messages.success(request, switched)
        return redirect("cards:settings")
    plan = switching.plan_switch(request.user, profile, target, timezone.now())
    peak = max([max(day.before, day.after) for day in plan.days] + [1])
    context = {"plan": plan, "profile": profile, "label": Scheduler(target).label, "peak": peak}
    return render(request, "cards/scheduler_switch.html", context)


@login_required
@require_GET
def note_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """The rendered note, so each card can link to the section it came from (``#anchor``), with the
    corrections its cards make shown beside the passages they correct."""
    note = get_object_or_404(Note.objects.visible_to(request.user), slug=slug)
    return render(request, "cards/note.html", {"note": note, "html": render_note(note.content, corrections_for(slug))})
