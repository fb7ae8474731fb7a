"""The calibration pages' reports, for a learner and for a team: one call into the scoring, then charts,
computed by a job on the scoring worker and served from the cache.

The figures are ``cards.scheduling.calibration``'s, which scores with the same code as
``python -m cards.scheduling.evaluate``. Scoring a team's log costs seconds of CPU (issue 36 measured it when
the page computed it), so no request computes one, and a page only reads:

1. A report is cached under a key made of everything it depends on (``Subject.key``): whose reviews (the
   learners' ids), how many and the newest (the ledger's count and largest id: a new review or an undo, which
   appends a reversal, changes both), and the FSRS parameters' version and target retention it is scored with.
   The newest report of each subject is also kept under the subject's own key, whatever it was computed from.
2. A page reads the key (one aggregate query) and the cache: the report for the log as it is, or else the
   subject's newest report, saying how many reviews it covers.
3. Reviews ask for new reports (``want``): beat's touched-days tick, which sees every learner day a review
   or an undo marked, wants the learner's and each of their teams'; a membership change or a kept FSRS fit
   wants theirs. A want sends the job (``cards.tasks.calibrate_learner``, ``teams.tasks.calibrate_team``) to
   the scoring worker at most once per ``CALIBRATION_REFRESH_AFTER`` per subject (a marker in the cache), to
   run once that window has closed, so the report takes in every review made while it was open.
4. The job (``compute``) reads the key first, then the reviews, and stores the report under both keys. Beat's
   nightly sweep computes every report missing from the cache (a first one, or one the cache dropped).

Runs in the web process (step 2), beat's tick (step 3) and on the scoring worker (step 4).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from cards import charts
from cards.models import Optimisation, ReviewLog
from cards.scheduling import calibration, evaluate
from cards.scheduling.fsrs6 import EPOCH, rating_for_quality

MONTHS_SHOWN = 24


def names(report: calibration.Report) -> dict[str, str]:
    """Each predictor's name on the page; FSRS-6 says whose parameters it ran with."""
    fitted = "fsrs_default" in report.scores
    return {
        "fsrs": _("FSRS-6 (your fitted parameters)") if fitted else _("FSRS-6 (default parameters)"),
        "fsrs_default": _("FSRS-6 (default parameters)"),
        "sm2": "SM-2",
        "avg": _("AVG (share recalled on earlier days)"),
        "moving_avg": _("MOVING-AVG (moving average of your recent recall)"),
    }


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


def contexts(
    reviews: Sequence[evaluate.Review],
    parameters: Sequence[float] | None,
    target: float,
    fitted_before: int | None = None,
) -> dict[str, dict[str, Any]]:
    """The page's context in every interface language, scored once: the charts carry words, and the report is
    computed on the scoring worker for whoever reads it later. ``fitted_before``: the first day the
    parameters' fit did not train on (``calibration.report``)."""
    report = calibration.report(reviews, parameters, fitted_before)
    found = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            found[code] = _context(report, target)
    return found


def _context(report: calibration.Report, target: float) -> dict[str, Any]:
    named = names(report)
    rows = [{"key": name, "name": named[name], **scores} for name, scores in report.scores.items()]
    drawn = {"fsrs": "FSRS-6", "sm2": "SM-2", "moving_avg": "MOVING-AVG"}  # short: the legend is one line
    diagram = charts.reliability_diagram(
        {
            drawn[name]: [charts.CalibrationPoint(b.predicted, b.recalled, b.count) for b in bins]
            for name, bins in report.reliability.items()
            if name in drawn
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
        "beats_moving_avg": report.beats_moving_avg,
    }


# A report stays in the cache this long after it was computed (a subject nobody reviews for is dropped, and
# beat's nightly sweep computes it again); a wanted job starts this many seconds after its window closes.
KEEP_FOR = timedelta(days=7)
WANT_MARGIN_SECONDS = 5


def latest_key(kind: str, subject_id: int) -> str:
    return f"calibration:{kind}:{subject_id}:latest"


def wanted_key(kind: str, subject_id: int) -> str:
    return f"calibration:{kind}:{subject_id}:wanted"


@dataclass(frozen=True)
class Subject:
    """Whose calibration (``kind`` "learner" or "team", and its id), over which learners' reviews, scored with
    which FSRS parameters (None: the defaults) of which version, against which target retention."""

    kind: str
    id: int
    user_ids: tuple[int, ...]
    parameters: Sequence[float] | None = field(default=None, compare=False)
    parameters_version: int = 0
    target: float = 0.9

    @property
    def latest_key(self) -> str:
        return latest_key(self.kind, self.id)

    def key(self) -> str:
        """Step 1: one aggregate over the ledger (``reviewlog_user_time_idx``)."""
        return self._key(self.ledger_mark())

    def ledger_mark(self) -> tuple[int, int]:
        found = ReviewLog.ledger.filter(user_id__in=self.user_ids).aggregate(n=Count("pk"), last=Max("pk"))
        return int(found["n"] or 0), int(found["last"] or 0)

    def _key(self, mark: tuple[int, int]) -> str:
        parts = (sorted(self.user_ids), mark, self.parameters_version, round(self.target, 4))
        digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:32]
        return f"calibration:{self.kind}:{self.id}:{digest}"


def fitted_before(subject: Subject) -> int | None:
    """The first day (a day number) the subject's FSRS parameters were not trained on: the split day of the
    latest kept fit that produced exactly these parameters. A fit kept before split days were recorded may have
    trained on every review before it finished, so its finishing day stands in. None (so the parameters are
    scored on no review) when no kept fit produced them: parameters set any other way, or a later fit's
    record kept beside older parameters, have an unknown training window, and any review may be in it."""
    if subject.kind != "learner" or not subject.parameters:
        return None
    wanted = [float(w) for w in subject.parameters]
    kept = next(
        (
            (split_day, finished_at)
            for split_day, finished_at, parameters in Optimisation.objects.filter(user_id=subject.id, kept=True)
            .order_by("-finished_at")
            .values_list("split_day", "finished_at", "parameters")
            if parameters is not None and [float(w) for w in parameters] == wanted
        ),
        None,
    )
    if kept is None:
        return None
    split_day, finished_at = kept
    day = split_day or (finished_at.date() + timedelta(days=1) if finished_at else None)
    return None if day is None else (day - EPOCH).days


def learner_subject(profile: Any) -> Subject:
    """A learner's own page: their log, scored with their FSRS parameters against their desired retention."""
    return Subject(
        "learner",
        profile.user_id,
        (profile.user_id,),
        profile.fsrs_parameters,
        profile.fsrs_parameters_version,
        float(profile.desired_retention),
    )


@dataclass(frozen=True)
class Report:
    """A computed page: the template's context per language, how many reviews the log had, when it was computed."""

    contexts: dict[str, dict[str, Any]]
    reviews: int
    computed_at: datetime

    @property
    def context(self) -> dict[str, Any]:
        """The context in the language of the request being answered (the default language's otherwise)."""
        language = translation.get_language() or settings.LANGUAGE_CODE
        return self.contexts.get(language) or self.contexts.get(settings.LANGUAGE_CODE) or {}


def compute(subject: Subject, now: datetime | None = None) -> Report:
    """Step 4, on the scoring worker: score the subject's log and keep the report under both keys."""
    mark = subject.ledger_mark()
    reviews = reviews_of(subject.user_ids)
    context = contexts(reviews, subject.parameters, subject.target, fitted_before(subject))
    report = Report(context, len(reviews), now or timezone.now())
    keep = int(KEEP_FOR.total_seconds())
    cache.set_many({subject._key(mark): report, subject.latest_key: report}, keep)
    return report


@dataclass(frozen=True)
class Page:
    """What a calibration page shows: the report (None until the first is computed) and whether it is the one for
    the log as it is now."""

    report: Report | None
    current: bool

    @property
    def catch_up_minutes(self) -> int:
        """How long newer reviews may wait for their report: the window, the margin, about a minute of work."""
        return math.ceil((settings.CALIBRATION_REFRESH_AFTER + WANT_MARGIN_SECONDS) / 60) + 1


def page(subject: Subject) -> Page:
    """Step 2: one aggregate query and one cache round trip; nothing is written or sent."""
    key = subject.key()
    found = cache.get_many([key, subject.latest_key])
    if key in found:
        return Page(found[key], current=True)
    return Page(found.get(subject.latest_key), current=False)


def is_current(subject: Subject) -> bool:
    """Whether the cache holds the report for the subject's log as it is (beat's sweep skips those)."""
    return cache.get(subject.key()) is not None


def want(kind: str, subject_id: int, send: Callable[[int], object]) -> bool:
    """Step 3: ``send(countdown)`` the subject's job unless one was sent within ``CALIBRATION_REFRESH_AFTER``.

    The job waits out the window (plus a margin: its read comes after the marker is gone), so a review made
    while the marker stands is in the job's read, and one made after it finds no marker and sends the next.
    The subject's first report is sent at once."""
    window = settings.CALIBRATION_REFRESH_AFTER
    if not cache.add(wanted_key(kind, subject_id), 1, window):
        return False
    first = cache.get(latest_key(kind, subject_id)) is None
    send(0 if first else window + WANT_MARGIN_SECONDS)
    return True
