"""Server-rendered SVG charts for the stats page.

The stats page must be readable without JavaScript, so every chart is plain SVG
markup built here: each mark carries a ``<title>`` (the browser shows it on hover
and screen readers read it), and the ``<svg>`` has ``role="img"`` with a title and
a one-line description. Every piece of text passes through ``_esc`` because labels
can come from note titles, which are user-controlled markdown.

Pure Python on purpose: no Django import, so the charts are tested without a
database and can be reused by a management command or an e-mail digest.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

WIDTH = 720
HEIGHT = 220
MARGIN_LEFT = 44
MARGIN_RIGHT = 12
MARGIN_TOP = 14
MARGIN_BOTTOM = 30
MAX_X_LABELS = 12
DAY = "D"  # a weekday's short name in the active language ("Mon", "周一")

BAR_FILL = "#3b82f6"
GRID_STROKE = "#e5e7eb"
AXIS_TEXT = "#4b5563"
SERIES_COLOURS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c")
# GitHub-like greens, level 0 (no reviews) to 4 (busiest days).
HEAT_COLOURS = ("#ebedf0", "#9be9a8", "#40c463", "#30a14e", "#216e39")
HEAT_CELL = 11
HEAT_GAP = 2


@dataclass(frozen=True)
class Bar:
    """One bar: ``label`` goes on the x axis, ``detail`` into the hover title."""

    label: str
    value: float
    detail: str = ""


@dataclass(frozen=True)
class Point:
    """One point of a line; ``value`` None leaves a gap (no data that day or week)."""

    label: str
    value: float | None
    detail: str = ""


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[Point] = field(default_factory=tuple)


def _esc(text: object) -> str:
    """Escape for both element text and attribute values (quotes included)."""
    return html.escape(str(text), quote=True)


def _safe_id(chart_id: str) -> str:
    """ids end up in ``aria-labelledby``; keep them to characters that need no escaping."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "-", chart_id).strip("-")
    return cleaned or "chart"


def _fmt(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3g}"


def nice_step(maximum: float, target_ticks: int = 4, *, integer: bool = False) -> float:
    """A 1/2/2.5/5 x 10^k step so that about ``target_ticks`` steps cover ``maximum``.

    Counts (``integer``) skip 2.5 and never step below 1: "2.5 reviews" is no tick.
    """
    if maximum <= 0:
        return 1.0
    raw = maximum / target_ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    multiples = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)
    step = next(m * magnitude for m in multiples if raw <= m * magnitude)
    return max(1.0, step) if integer else step


def _axis_top(maximum: float, integer: bool) -> tuple[float, float]:
    """The y-axis top and tick step."""
    step = nice_step(maximum, integer=integer)
    top = max(step, math.ceil(maximum / step) * step)
    return top, step


def _open_svg(chart_id: str, title: str, summary: str, width: int, height: int, kind: str) -> list[str]:
    cid = _safe_id(chart_id)
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" id="{cid}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-labelledby="{cid}-title {cid}-desc" font-family="sans-serif" font-size="11">',
        f'<title id="{cid}-title">{_esc(title)}</title>',
        f'<desc id="{cid}-desc">{_esc(summary)}</desc>',
    ]


def empty_chart(chart_id: str, title: str, message: str = "") -> str:
    """What a chart shows before the learner has any reviews: a framed message, never an error."""
    message = message or _("No data yet.")
    parts = _open_svg(chart_id, title, message, WIDTH, 80, "empty")
    parts.append(f'<rect x="0.5" y="0.5" width="{WIDTH - 1}" height="79" fill="none" stroke="{GRID_STROKE}"/>')
    parts.append(f'<text x="{WIDTH / 2}" y="44" text-anchor="middle" fill="{AXIS_TEXT}">{_esc(message)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _y_grid(top: float, step: float, unit: str) -> list[str]:
    """Horizontal grid lines with their tick labels, shared by bar and line charts."""
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    parts = ['<g class="grid" aria-hidden="true">']
    ticks = int(round(top / step))
    for i in range(ticks + 1):
        value = i * step
        y = MARGIN_TOP + plot_h - plot_h * value / top
        parts.append(
            f'<line x1="{MARGIN_LEFT}" x2="{WIDTH - MARGIN_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID_STROKE}"/>'
        )
        parts.append(
            f'<text x="{MARGIN_LEFT - 4}" y="{y + 4:.1f}" text-anchor="end" fill="{AXIS_TEXT}">'
            f"{_esc(_fmt(value) + unit)}</text>"
        )
    parts.append("</g>")
    return parts


def _x_labels(labels: Sequence[str], centre: Callable[[int], float]) -> list[str]:
    """At most MAX_X_LABELS evenly spaced labels, always including the last one."""
    if not labels:
        return []
    every = max(1, math.ceil(len(labels) / MAX_X_LABELS))
    y = HEIGHT - MARGIN_BOTTOM + 16
    parts = ['<g class="x-labels" aria-hidden="true">']
    shown = [i for i in range(len(labels)) if (len(labels) - 1 - i) % every == 0]
    for i in shown:
        parts.append(
            f'<text x="{centre(i):.1f}" y="{y}" text-anchor="middle" fill="{AXIS_TEXT}">{_esc(labels[i])}</text>'
        )
    parts.append("</g>")
    return parts


def bar_chart(
    bars: Sequence[Bar],
    *,
    chart_id: str,
    title: str,
    unit: str = "",
    gap: float = 0.2,
    empty_message: str = "",
) -> str:
    """Vertical bars, one per item, each with a hover title and a transparent full-height hit area.

    The hit area matters for zero-height bars: without it a day with no reviews
    could not be hovered to read "0 reviews".
    """
    if not bars or all(bar.value == 0 for bar in bars):
        return empty_chart(chart_id, title, empty_message)
    integer = all(float(bar.value).is_integer() for bar in bars)
    top, step = _axis_top(max(bar.value for bar in bars), integer)
    total = sum(bar.value for bar in bars)
    summary = f"{len(bars)} bars from {bars[0].label} to {bars[-1].label}; total {_fmt(total)}{unit}."
    parts = _open_svg(chart_id, title, summary, WIDTH, HEIGHT, "bar")
    parts.extend(_y_grid(top, step, unit))
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    slot = plot_w / len(bars)
    bar_w = max(1.0, slot * (1 - gap))
    parts.append('<g class="bars">')
    for i, bar in enumerate(bars):
        x = MARGIN_LEFT + i * slot
        h = plot_h * max(bar.value, 0) / top
        detail = bar.detail or f"{bar.label}: {_fmt(bar.value)}{unit}"
        parts.append(
            f"<g><title>{_esc(detail)}</title>"
            f'<rect x="{x:.2f}" y="{MARGIN_TOP}" width="{slot:.2f}" height="{plot_h}" fill="transparent"/>'
            f'<rect x="{x + (slot - bar_w) / 2:.2f}" y="{MARGIN_TOP + plot_h - h:.2f}" width="{bar_w:.2f}" '
            f'height="{h:.2f}" fill="{BAR_FILL}" data-value="{_esc(_fmt(bar.value))}"/></g>'
        )
    parts.append("</g>")
    parts.extend(_x_labels([bar.label for bar in bars], lambda i: MARGIN_LEFT + (i + 0.5) * slot))
    parts.append("</svg>")
    return "\n".join(parts)


def _line_paths(points: Sequence[Point], x_of: Callable[[int], float], y_of: Callable[[float], float]) -> list[str]:
    """Path data for the runs of consecutive known values; a None value breaks the line."""
    runs: list[str] = []
    current: list[str] = []
    for i, point in enumerate(points):
        if point.value is None:
            if current:
                runs.append(" ".join(current))
            current = []
            continue
        command = "M" if not current else "L"
        current.append(f"{command}{x_of(i):.2f},{y_of(point.value):.2f}")
    if current:
        runs.append(" ".join(current))
    return runs


def line_chart(
    series: Sequence[Series],
    *,
    chart_id: str,
    title: str,
    unit: str = "",
    y_max: float | None = None,
    empty_message: str = "",
) -> str:
    """One or more lines over shared x labels (taken from the first series), with a legend.

    Every known point gets a small circle with its own hover title, so the exact
    values can be read without JavaScript.
    """
    values = [p.value for s in series for p in s.points if p.value is not None]
    if not series or not values:
        return empty_chart(chart_id, title, empty_message)
    integer = y_max is None and all(float(v).is_integer() for v in values)
    top, step = _axis_top(y_max if y_max is not None else max(values), integer)
    labels = [p.label for p in series[0].points]
    names = ", ".join(s.name for s in series)
    summary = f"{len(series)} line(s) ({names}) over {len(labels)} points from {labels[0]} to {labels[-1]}."
    parts = _open_svg(chart_id, title, summary, WIDTH, HEIGHT, "line")
    parts.extend(_y_grid(top, step, unit))
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    slot = plot_w / max(1, len(labels))

    def x_of(i: int) -> float:
        return MARGIN_LEFT + (i + 0.5) * slot

    def y_of(value: float) -> float:
        return MARGIN_TOP + plot_h - plot_h * min(max(value, 0), top) / top

    for n, line in enumerate(series):
        colour = SERIES_COLOURS[n % len(SERIES_COLOURS)]
        parts.append(f'<g class="series" data-series="{_esc(line.name)}">')
        for path in _line_paths(line.points, x_of, y_of):
            parts.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for i, point in enumerate(line.points):
            if point.value is None:
                continue
            detail = point.detail or f"{line.name}, {point.label}: {_fmt(point.value)}{unit}"
            parts.append(
                f'<circle cx="{x_of(i):.2f}" cy="{y_of(point.value):.2f}" r="3" fill="{colour}">'
                f"<title>{_esc(detail)}</title></circle>"
            )
        parts.append("</g>")
        legend_x = MARGIN_LEFT + 8 + n * 120
        parts.append(
            f'<g class="legend"><rect x="{legend_x}" y="2" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="11" fill="{AXIS_TEXT}">{_esc(line.name)}</text></g>'
        )
    parts.extend(_x_labels(labels, x_of))
    parts.append("</svg>")
    return "\n".join(parts)


def histogram_bins(counts: Mapping[float, int], edges: Sequence[float], *, unit: str = "") -> list[Bar]:
    """Fold ``value -> count`` pairs (already grouped by the database) into bins.

    Bin i holds ``edges[i] <= value < edges[i + 1]``; values below the first edge
    join the first bin and values at or above the last edge form a final open bin
    labelled ``"x+"``, so no card is ever dropped from the picture.
    """
    if len(edges) < 2:
        raise ValueError("a histogram needs at least two edges")
    totals = [0] * len(edges)
    for value, count in counts.items():
        index = 0
        while index < len(edges) - 1 and value >= edges[index + 1]:
            index += 1
        totals[index] += count
    bars = []
    for i, total in enumerate(totals):
        if i < len(edges) - 1:
            label = f"{_fmt(edges[i])}{unit}"
            span = f"{_fmt(edges[i])}{unit} to under {_fmt(edges[i + 1])}{unit}"
        else:
            label = f"{_fmt(edges[i])}{unit}+"
            span = f"{_fmt(edges[i])}{unit} or more"
        bars.append(Bar(label=label, value=total, detail=f"{span}: {total}"))
    return bars


def histogram(
    counts: Mapping[float, int],
    edges: Sequence[float],
    *,
    chart_id: str,
    title: str,
    unit: str = "",
    empty_message: str = "",
) -> str:
    """A bar chart of binned values with touching bars, the way histograms are read."""
    bars = histogram_bins(counts, edges, unit=unit)
    return bar_chart(bars, chart_id=chart_id, title=title, gap=0.04, empty_message=empty_message)


def heatmap_start(end: date) -> date:
    """The first day shown when the heatmap ends on ``end``: the day after the same date a year before.

    That makes the map cover 365 days, or 366 when the year ending on ``end``
    contains a 29 February.
    """
    try:
        year_before = end.replace(year=end.year - 1)
    except ValueError:  # 29 February: the year before has none.
        year_before = date(end.year - 1, 2, 28)
    return year_before + timedelta(days=1)


def heat_level(count: int, busiest: int) -> int:
    """0 for no reviews, else 1..4 in proportion to the busiest day."""
    if count <= 0 or busiest <= 0:
        return 0
    return max(1, min(4, math.ceil(4 * count / busiest)))


def year_heatmap(counts: Mapping[date, int], *, end: date, chart_id: str, title: str, noun: str = "review") -> str:
    """A GitHub/Anki-style year of days: one column per week (Monday on top), one cell per day.

    Cells are drawn even for an empty year, so the learner sees the calendar
    they are about to fill rather than an error or a blank box.
    """
    start = heatmap_start(end)
    first_monday = start - timedelta(days=start.weekday())
    days = (end - start).days + 1
    weeks = (end - first_monday).days // 7 + 1
    left, top_pad = 30, 18
    width = left + weeks * (HEAT_CELL + HEAT_GAP) + 10
    height = top_pad + 7 * (HEAT_CELL + HEAT_GAP) + 24
    in_range = {day: count for day, count in counts.items() if start <= day <= end}
    busiest = max(in_range.values(), default=0)
    total = sum(in_range.values())
    active = sum(1 for count in in_range.values() if count > 0)
    summary = f"{total} {noun}s on {active} of {days} days from {start.isoformat()} to {end.isoformat()}."
    span = {"total": total, "active": active, "days": days, "start": start.isoformat(), "end": end.isoformat()}
    # The nouns the site uses, said in the learner's language ("answer": every rating, /stats/'s count).
    if noun == "review":
        summary = _("%(total)d reviews on %(active)d of %(days)d days from %(start)s to %(end)s.") % span
    elif noun == "answer":
        summary = _("%(total)d answers on %(active)d of %(days)d days from %(start)s to %(end)s.") % span
    parts = _open_svg(chart_id, title, summary, width, height, "heatmap")
    parts.extend(_heatmap_axes(start, end, first_monday, left, top_pad))
    parts.append('<g class="days">')
    for offset in range(days):
        day = start + timedelta(days=offset)
        count = in_range.get(day, 0)
        column = (day - first_monday).days // 7
        x = left + column * (HEAT_CELL + HEAT_GAP)
        y = top_pad + day.weekday() * (HEAT_CELL + HEAT_GAP)
        if noun == "review":
            counted = ngettext("%(n)d review", "%(n)d reviews", count) % {"n": count}
        elif noun == "answer":
            counted = ngettext("%(n)d answer", "%(n)d answers", count) % {"n": count}
        else:
            counted = f"{count} {noun if count == 1 else noun + 's'}"
        parts.append(
            f'<rect x="{x}" y="{y}" width="{HEAT_CELL}" height="{HEAT_CELL}" rx="2" '
            f'fill="{HEAT_COLOURS[heat_level(count, busiest)]}" data-date="{day.isoformat()}" data-count="{count}">'
            f"<title>{_esc(f'{date_format(day, DAY)} {day.isoformat()}: {counted}')}</title></rect>"
        )
    parts.append("</g>")
    parts.extend(_heatmap_legend(left, height - 8))
    parts.append("</svg>")
    return "\n".join(parts)


def _heatmap_axes(start: date, end: date, first_monday: date, left: int, top_pad: int) -> list[str]:
    """Month names over the first week column of each month, weekday names on the left."""
    parts = ['<g class="axes" aria-hidden="true">']
    for row, name in (
        (0, pgettext("weekday", "Mon")),
        (2, pgettext("weekday", "Wed")),
        (4, pgettext("weekday", "Fri")),
    ):
        y = top_pad + row * (HEAT_CELL + HEAT_GAP) + HEAT_CELL - 1
        parts.append(f'<text x="0" y="{y}" fill="{AXIS_TEXT}" font-size="9">{name}</text>')
    # Label each month whose first day is on the map; a partial first month stays unlabelled
    # so its name cannot collide with the next month's.
    month = start if start.day == 1 else date(start.year + start.month // 12, start.month % 12 + 1, 1)
    while month <= end:
        column = (month - first_monday).days // 7
        x = left + column * (HEAT_CELL + HEAT_GAP)
        parts.append(
            f'<text x="{x}" y="{top_pad - 6}" fill="{AXIS_TEXT}" font-size="9">{date_format(month, "M")}</text>'
        )
        month = date(month.year + month.month // 12, month.month % 12 + 1, 1)
    parts.append("</g>")
    return parts


def _heatmap_legend(left: int, y: int) -> list[str]:
    parts = ['<g class="legend" aria-hidden="true">']
    less, more = _esc(pgettext("heatmap", "Less")), _esc(pgettext("heatmap", "More"))
    parts.append(f'<text x="{left}" y="{y}" fill="{AXIS_TEXT}" font-size="9">{less}</text>')
    for level, colour in enumerate(HEAT_COLOURS):
        x = left + 28 + level * (HEAT_CELL + HEAT_GAP)
        parts.append(f'<rect x="{x}" y="{y - 9}" width="{HEAT_CELL}" height="{HEAT_CELL}" rx="2" fill="{colour}"/>')
    more_x = left + 28 + len(HEAT_COLOURS) * (HEAT_CELL + HEAT_GAP) + 4
    parts.append(f'<text x="{more_x}" y="{y}" fill="{AXIS_TEXT}" font-size="9">{more}</text>')
    parts.append("</g>")
    return parts


@dataclass(frozen=True)
class CalibrationPoint:
    """One bin of a reliability diagram: mean prediction, share that came true, and its size."""

    predicted: float
    observed: float
    count: int


RELIABILITY_SIZE = 320
RELIABILITY_MARGIN = 40


def reliability_diagram(
    series: Mapping[str, Sequence[CalibrationPoint]], *, chart_id: str, title: str, empty_message: str = ""
) -> str:
    """Predicted recall (x) against recall that happened (y), one coloured series per scheduler, over
    the diagonal a perfectly calibrated model would follow; each point's area grows with its bin."""
    if not any(series.values()):
        return empty_chart(chart_id, title, empty_message)
    size, margin = RELIABILITY_SIZE, RELIABILITY_MARGIN
    plot = size - 2 * margin
    summary = f"Predicted against observed recall for {', '.join(series)}; the diagonal is perfect calibration."
    parts = _open_svg(chart_id, title, summary, size, size, "reliability")

    def x_of(p: float) -> float:
        return margin + plot * p

    def y_of(p: float) -> float:
        return margin + plot - plot * p

    parts.append('<g class="grid" aria-hidden="true">')
    for tick in (0, 0.25, 0.5, 0.75, 1):
        parts.append(
            f'<line x1="{x_of(0):.1f}" x2="{x_of(1):.1f}" y1="{y_of(tick):.1f}" y2="{y_of(tick):.1f}" '
            f'stroke="{GRID_STROKE}"/>'
            f'<text x="{margin - 4}" y="{y_of(tick) + 4:.1f}" text-anchor="end" fill="{AXIS_TEXT}">{_fmt(tick)}</text>'
            f'<text x="{x_of(tick):.1f}" y="{size - margin + 14}" text-anchor="middle" fill="{AXIS_TEXT}">'
            f"{_fmt(tick)}</text>"
        )
    parts.append(
        f'<line class="diagonal" x1="{x_of(0):.1f}" y1="{y_of(0):.1f}" x2="{x_of(1):.1f}" y2="{y_of(1):.1f}" '
        f'stroke="{AXIS_TEXT}" stroke-dasharray="4 3"/>'
        f'<text x="{size / 2}" y="{size - 6}" text-anchor="middle" fill="{AXIS_TEXT}">predicted recall</text>'
        f'<text x="12" y="{size / 2}" text-anchor="middle" fill="{AXIS_TEXT}" '
        f'transform="rotate(-90 12 {size / 2})">recalled</text></g>'
    )
    biggest = max((p.count for points in series.values() for p in points), default=1)
    for n, (name, points) in enumerate(series.items()):
        colour = SERIES_COLOURS[n % len(SERIES_COLOURS)]
        parts.append(f'<g class="series" data-series="{_esc(name)}">')
        for p in points:
            radius = 2.5 + 5 * math.sqrt(p.count / biggest)
            detail = f"{name}: predicted {p.predicted:.2f}, recalled {p.observed:.2f} ({p.count} reviews)"
            parts.append(
                f'<circle cx="{x_of(p.predicted):.2f}" cy="{y_of(p.observed):.2f}" r="{radius:.1f}" '
                f'fill="{colour}" fill-opacity="0.7"><title>{_esc(detail)}</title></circle>'
            )
        parts.append("</g>")
        parts.append(
            f'<g class="legend"><rect x="{margin + n * 90}" y="8" width="10" height="10" fill="{colour}"/>'
            f'<text x="{margin + n * 90 + 14}" y="17" fill="{AXIS_TEXT}">{_esc(name)}</text></g>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
