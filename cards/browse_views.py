"""Browsing decks and cards, and the learner's stats page.

Cards are shared by every learner, so any signed-in user may browse any deck or
card; what is personal is the state and the history shown next to a card, and
those are always filtered on ``request.user``. The numbers come from
``cards.stats`` (a few aggregate queries each) and the charts from the pure
``cards.charts``, so every page reads fully without JavaScript.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from uuid import UUID

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from cards import calibrating, charts, extensions, history, learning, revlog
from cards import review as reviewing
from cards import stats as numbers
from cards.models import Card, Course, Note, Profile, ReviewLog

CARDS_PER_PAGE = 50
MAX_QUERY_LENGTH = 200
REVIEW_DAYS = 90
FORECAST_DAYS = 30
RETENTION_WEEKS = 12  # 84 days: whole weeks inside the 90 days of activity
HOURLY_DAYS = 90
EASE_EDGES = (1.3, 1.5, 1.7, 1.9, 2.1, 2.3, 2.5, 2.7, 2.9)


def _get_note(request: HttpRequest, slug: str) -> Note:
    """A shared note or the learner's own import; another learner's private deck is a 404."""
    return get_object_or_404(Note.objects.visible_to(request.user), slug=slug)


def _get_card(request: HttpRequest, card_uuid: UUID) -> Card:
    """Any card, retired ones included: a learner's history must stay readable after a re-import drops it."""
    return get_object_or_404(Card.objects.visible_to(request.user).select_related("note"), uuid=card_uuid)


def _today(profile: Profile) -> date:
    return reviewing.learner_today(profile, timezone.now())


@login_required
@require_GET
def decks(request: HttpRequest) -> HttpResponse:
    profile = reviewing.get_profile(request.user)
    rows = numbers.deck_rows(request.user, _today(profile))
    courses = list(Course.objects.readable_by(request.user))
    course = next((c for c in courses if c.slug == request.GET.get("course")), None)  # unknown: every deck
    context = {
        "rows": [row for row in rows if row["note"].course_id == course.pk] if course else rows,
        "courses": courses,
        "course": course,
        "order": learning.learner_order(request.user),
        "order_sections": extensions.order_sections(request.user),
    }
    return render(request, "cards/decks.html", context)


@login_required
@require_POST
def default_order(request: HttpRequest) -> HttpResponse:
    """Back to the default learning order, kept until the learner picks another (a team never overrides it)."""
    learning.use_default_order(request.user)
    messages.success(request, _("Your new cards follow the default learning order again."))
    return redirect(reverse("cards:decks") + "#learning-order")


def _deck_filters(request: HttpRequest) -> tuple[str, str]:
    """The kind and search text from the query string; an unknown kind means all kinds, not an error."""
    kind = request.GET.get("kind", "")
    if kind not in Card.Kind.values:
        kind = ""
    query = request.GET.get("q", "").strip()[:MAX_QUERY_LENGTH]
    return kind, query


@login_required
@require_GET
def deck(request: HttpRequest, slug: str) -> HttpResponse:
    note = _get_note(request, slug)
    profile = reviewing.get_profile(request.user)
    kind, query = _deck_filters(request)
    listing = extensions.kind_listing(kind, note.slug) if kind else None
    if listing is not None:
        return redirect(listing)  # e.g. drills: their own table, with the learner's status on each
    cards = Card.objects.active().filter(note=note)
    kind_counts = dict(cards.values_list("kind").annotate(n=Count("id")).order_by())
    if kind:
        cards = cards.filter(kind=kind)
    if query:
        cards = cards.filter(Q(front__icontains=query) | Q(back__icontains=query))
    page = Paginator(cards.order_by("position", "pk"), CARDS_PER_PAGE).get_page(request.GET.get("page"))
    states = numbers.card_states(request.user, [card.pk for card in page])
    context = {
        "note": note,
        "page": page,
        "rows": [(card, states.get(card.pk)) for card in page],
        "kinds": [(value, label, kind_counts.get(value, 0)) for value, label in Card.Kind.choices],
        "kind": kind,
        "query": query,
        "today": _today(profile),
        "total": sum(kind_counts.values()),
    }
    return render(request, "cards/deck.html", context)


@login_required
@require_GET
def card_detail(request: HttpRequest, card_uuid: UUID) -> HttpResponse:
    card = _get_card(request, card_uuid)
    profile = reviewing.get_profile(request.user)
    state = numbers.card_states(request.user, [card.pk]).get(card.pk)
    history, reviews = numbers.card_history(request.user, card, profile.zone)
    context = {
        "card": card,
        "state": state,
        "history": history,
        "reviews": reviews,
        "today": _today(profile),
        "zone": profile.zone,
    }
    return render(request, "cards/card_detail.html", context)


@login_required
@require_GET
def revlog_export(request: HttpRequest) -> StreamingHttpResponse:
    """The learner's whole review log as CSV, ready for ``python -m cards.scheduling.evaluate``."""
    logs = ReviewLog.objects.filter(user=request.user)
    response = StreamingHttpResponse(revlog.csv_lines(revlog.revlog_rows(logs)), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="revlog.csv"'
    return response


class HistoryImportForm(forms.Form):
    file = forms.FileField(
        label=gettext_lazy("Review log (CSV)"),
        help_text=gettext_lazy("The file “Download my review log (CSV)” writes, here or on another quizsite."),
    )


@login_required
@require_http_methods(["GET", "POST"])
def history_import(request: HttpRequest) -> HttpResponse:
    """A learner's past reviews as their history (``cards.history``), so calibration and fitting start from it."""
    form = HistoryImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            if upload.size > settings.ANKI_IMPORT_MAX_BYTES:
                raise history.HistoryImportError(
                    _("The file is %(size)d bytes, over the %(limit)d byte limit.")
                    % {"size": upload.size, "limit": settings.ANKI_IMPORT_MAX_BYTES}
                )
            summary = history.import_csv(request.user, upload.read(), timezone.now())
        except history.HistoryImportError as exc:
            form.add_error("file", str(exc))
        else:
            imported = ngettext(
                "Imported %(n)d review into your history.",
                "Imported %(n)d reviews into your history.",
                summary.imported,
            ) % {"n": summary.imported}
            skipped = _(
                "Skipped: %(duplicates)d already in your log, %(unknown)d of cards not here, %(today)d from today on."
            ) % {"duplicates": summary.duplicates, "unknown": summary.unknown_cards, "today": summary.not_before_today}
            messages.success(request, f"{imported} {skipped}")
            return redirect("cards:stats")
    return render(request, "cards/history_import.html", {"form": form}, status=400 if form.errors else 200)


@login_required
@require_GET
def calibration(request: HttpRequest) -> HttpResponse:
    """How well SM-2 and FSRS predict this learner's recall, scored on time-split folds of their own log; served
    from the cache, computed by the scoring worker when reviews change it (``cards.calibrating``)."""
    profile = reviewing.get_profile(request.user)
    shown = calibrating.page(calibrating.learner_subject(profile))
    context = {**(shown.report.context if shown.report else {}), "shown": shown}
    export_url = reverse("cards:revlog_export")
    return render(request, "cards/calibration.html", {**context, "whose": _("your"), "export_url": export_url})


@login_required
@require_GET
def stats(request: HttpRequest) -> HttpResponse:
    """The whole stats page: eight aggregate queries, whatever the number of reviews."""
    profile = reviewing.get_profile(request.user)
    now = timezone.now()
    today = reviewing.learner_today(profile, now)
    activity = numbers.daily_activity(request.user, today - timedelta(days=REVIEW_DAYS - 1), today)
    # The heatmap's older days come from a cheap count; the last 90 are already in ``activity``.
    year = numbers.daily_counts(request.user, charts.heatmap_start(today), activity[0].day - timedelta(days=1))
    year.update((a.day, a.reviews) for a in activity)
    forecast = numbers.due_forecast(request.user, today, FORECAST_DAYS)
    hours = numbers.hourly_breakdown(request.user, profile.zone, now - timedelta(days=HOURLY_DAYS), now)
    context: dict[str, Any] = {
        "profile": profile,
        "today": today,
        "summary": numbers.collection_summary(request.user, today),
        "streak": numbers.current_streak(year, today),
        "year_total": sum(year.values()),
        "days_studied": sum(1 for n in year.values() if n),
        "retention": numbers.retention_table(activity, today),
        "forecast": forecast,
        "hours": hours,
        "hourly_days": HOURLY_DAYS,
        "sections": extensions.stats_sections(request.user),
        # Every rating counts here (same-day repeats, output answers, drill verdicts): "answers", as labelled.
        "heatmap": charts.year_heatmap(
            year, end=today, chart_id="year-heatmap", title=_("Answers in the last year"), noun="answer"
        ),
        **_stats_charts(activity, forecast, hours, numbers.ease_counts(request.user), today),
    }
    return render(request, "cards/stats.html", context)


def _percent(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def _stats_charts(
    activity: list[numbers.DayActivity],
    forecast: list[reviewing.ForecastDay],
    hours: list[numbers.HourRow],
    ease: dict[float, int],
    today: date,
) -> dict[str, str]:
    """Turn the numbers into SVG; every hover title spells out the exact figure."""
    review_bars = [
        charts.Bar(
            f"{a.day:%m-%d}",
            a.reviews,
            _("%(day)s: %(answers)d answers (%(new)d new)") % {"day": a.day, "answers": a.reviews, "new": a.new},
        )
        for a in activity
    ]
    forecast_bars = [
        charts.Bar(
            f"{f['day']:%m-%d}",
            f["count"],
            (_("%(day)s: %(count)d due (overdue included)") if f["day"] == today else _("%(day)s: %(count)d due"))
            % {"day": f["day"], "count": f["count"]},
        )
        for f in forecast
    ]
    hour_bars = [
        charts.Bar(
            f"{h['hour']:02d}",
            h["reviews"],
            f"{h['hour']:02d}:00-{h['hour']:02d}:59: {h['reviews']} answers, "
            + (f"{_percent(h['passed'], h['reviews'])}% passed" if h["reviews"] else "none"),
        )
        for h in hours
    ]
    no_reviews = _("No reviews yet.")
    return {
        "reviews_chart": charts.bar_chart(
            review_bars, chart_id="reviews-per-day", title=_("Answers per day"), empty_message=no_reviews
        ),
        "forecast_chart": charts.bar_chart(
            forecast_bars, chart_id="due-forecast", title=_("Due forecast"), empty_message=_("Nothing due in 30 days.")
        ),
        "retention_chart": _retention_chart(activity, today),
        "ease_chart": charts.histogram(
            ease,
            EASE_EDGES,
            chart_id="ease-histogram",
            title=_("Easiness of seen cards"),
            empty_message=_("No cards seen yet."),
        ),
        "hours_chart": charts.bar_chart(
            hour_bars, chart_id="hourly", title=_("Answers by hour of day"), empty_message=no_reviews
        ),
    }


def _retention_chart(activity: list[numbers.DayActivity], today: date) -> str:
    """Young and mature true retention per week, as two lines; a week without such reviews is a gap."""
    weeks = numbers.weekly_retention(activity, today, RETENTION_WEEKS)
    labels = [
        f"{row_end:%m-%d}"
        for row_end in (today - timedelta(days=7 * back) for back in range(RETENTION_WEEKS - 1, -1, -1))
    ]
    lines = []
    for name, attr in (("Young", "young"), ("Mature", "mature")):
        points = []
        for label, week in zip(labels, weeks, strict=True):
            passed, total = getattr(week, f"{attr}_passed"), getattr(week, f"{attr}_total")
            detail = f"{name} cards, 7 days to {label}: {passed} of {total} passed"
            points.append(charts.Point(label, _percent(passed, total), detail))
        lines.append(charts.Series(name, points))
    return charts.line_chart(
        lines,
        chart_id="weekly-retention",
        title=_("Weekly true retention"),
        unit="%",
        y_max=100,
        empty_message=_("No reviews of seen cards yet."),
    )
