"""The team stats page: members' activity and retention over time, as server-rendered SVG.

Reuses the stats page's pure chart functions (``cards.charts``), so the team page needs no JavaScript
and looks like the learner's own stats.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta

from django.utils.translation import gettext as _

from cards.charts import Bar, Point, Series, bar_chart, line_chart

from .models import DailyActivity, Team
from .xp import true_retention

ACTIVITY_DAYS = 30
WEEKS = 12
TOP_MEMBERS = 5


@dataclass(frozen=True)
class TeamCharts:
    activity_svg: str
    xp_svg: str
    retention_svg: str


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def team_charts(team: Team, members: dict[int, str], today: date) -> TeamCharts:
    """Three charts from one query over the members' rollup for the last ``WEEKS`` weeks."""
    first_week = _monday(today) - timedelta(weeks=WEEKS - 1)
    rows = DailyActivity.objects.filter(user_id__in=list(members), day__gte=first_week, day__lte=today).values_list(
        "user_id", "day", "reviews", "xp", "mature_reviews", "mature_passed"
    )
    per_day: dict[date, int] = defaultdict(int)
    xp_week: dict[tuple[int, date], int] = defaultdict(int)
    mature: dict[date, list[int]] = defaultdict(lambda: [0, 0])
    totals: dict[int, int] = defaultdict(int)
    for uid, day, reviews, xp, m_reviews, m_passed in rows:
        per_day[day] += reviews
        week = _monday(day)
        xp_week[uid, week] += xp
        totals[uid] += xp
        mature[week][0] += m_reviews
        mature[week][1] += m_passed
    days = [today - timedelta(days=n) for n in range(ACTIVITY_DAYS - 1, -1, -1)]
    bars = [
        Bar(d.strftime("%m-%d"), per_day.get(d, 0), _("%(day)s: %(n)d reviews") % {"day": d, "n": per_day.get(d, 0)})
        for d in days
    ]
    weeks = [first_week + timedelta(weeks=n) for n in range(WEEKS)]
    labels = [w.strftime("%m-%d") for w in weeks]
    top = sorted(totals, key=lambda uid: (-totals[uid], uid))[:TOP_MEMBERS]
    xp_series = [
        Series(members[uid], tuple(Point(lbl, xp_week.get((uid, w), 0)) for lbl, w in zip(labels, weeks, strict=True)))
        for uid in top
    ]
    retention_points = []
    for label, week in zip(labels, weeks, strict=True):
        value = true_retention(*mature[week]) if week in mature else None
        retention_points.append(Point(label, None if value is None else round(100 * value, 1)))
    tag = team.uuid.hex[:8]
    return TeamCharts(
        activity_svg=bar_chart(bars, chart_id=f"team-{tag}-activity", title=_("Team reviews per day"), unit=""),
        xp_svg=line_chart(xp_series, chart_id=f"team-{tag}-xp", title=_("Weekly XP of the most active members")),
        retention_svg=line_chart(
            [Series(_("Team true retention"), tuple(retention_points))],
            chart_id=f"team-{tag}-retention",
            title=_("Team true retention per week (mature cards)"),
            unit="%",
            y_max=100,
            empty_message=_("Not enough mature-card reviews yet."),
        ),
    )
