"""The calibration pages' context, for a learner and for a team: one call into the scoring, then charts.

Runs in the web process. The figures are ``cards.scheduling.calibration``'s, which scores with the
same code as ``python -m cards.scheduling.evaluate``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.utils.translation import gettext as _

from cards import charts
from cards.models import ReviewLog
from cards.scheduling import calibration, evaluate
from cards.scheduling.fsrs6 import EPOCH, rating_for_quality

NAMES = {"sm2": "SM-2", "fsrs": "FSRS-6"}
MONTHS_SHOWN = 24


def reviews_of(user_ids: Iterable[int]) -> list[evaluate.Review]:
    """The learners' logs as the scoring reads them; a card id carries its learner, so two learners'
    copies of one card stay two cards."""
    rows = ReviewLog.objects.filter(user_id__in=list(user_ids)).order_by("reviewed_at", "pk")
    return [
        evaluate.Review(card_id=f"{user_id}:{card_id}", day=(day - EPOCH).days, rating=rating_for_quality(quality))
        for user_id, card_id, day, quality in rows.values_list("user_id", "card_id", "review_day", "quality").iterator(
            chunk_size=5000
        )
    ]


def context(reviews: Sequence[evaluate.Review], parameters: Sequence[float] | None, target: float) -> dict[str, Any]:
    report = calibration.report(reviews, parameters)
    rows = [{"name": NAMES[name], **scores} for name, scores in report.scores.items()]
    diagram = charts.reliability_diagram(
        {
            NAMES[name]: [charts.CalibrationPoint(b.predicted, b.recalled, b.count) for b in bins]
            for name, bins in report.reliability.items()
        },
        chart_id="reliability",
        title=_("Predicted recall against recall, on the test folds"),
    )
    shown = report.months[-MONTHS_SHOWN:]
    months = [m.month.strftime("%Y-%m") for m in shown]
    retention = charts.line_chart(
        [
            charts.Series(
                _("true retention"),
                [
                    charts.Point(
                        label,
                        round(m.retention, 3),
                        _("%(month)s: %(retention).3f of %(count)d")
                        % {"month": label, "retention": m.retention, "count": m.count},
                    )
                    for label, m in zip(months, shown, strict=True)
                ],
            ),
            charts.Series(_("target"), [charts.Point(label, target) for label in months]),
        ],
        chart_id="true-retention",
        title=_("True retention by month (the last two years) against the target"),
        y_max=1,
    )
    return {
        "report": report,
        "rows": rows,
        "diagram": diagram,
        "retention_chart": retention,
        "min_points": calibration.MIN_TEST_POINTS,
        "target": target,
    }
