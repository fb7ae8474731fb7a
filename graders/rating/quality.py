"""Verdicts to SM-2 quality: the one place that decides how a drill review rates its card.

Pure (no Django): it takes what the caller counted and returns an integer 0..5, so every row of
the table below has a plain test (tests/graders/test_quality.py).

| how the review ended                                              | quality |
| ----------------------------------------------------------------- | ------- |
| accepted on the first submission                                  | 5       |
| accepted on the second or third submission                        | 4       |
| accepted after more submissions                                   | 3       |
| accepted after viewing the reference solution                     | 2       |
| moved on after a partially right answer (some hidden cases pass)  | 2       |
| moved on after a wrong answer (or a runtime error)                | 1       |
| moved on after rejected / time, memory or output limit; gave up   | 0       |

Seeing the answer is not recalling it: an acceptance after the reference was viewed is a failed recall
(quality 2, which FSRS reads as Again and SM-2 as a lapse; issue 39). Rated 3 it was Hard, which FSRS
counts as recalled, so the memory model learnt that the learner remembered what they had just read.

Hints cap the table: a review in which the learner opened one hint is rated at most 4 (Good), two or
more at most 3 (Hard), whatever the attempts (``HINT_CAPS``). A cap only lowers: a failing review's 2,
1 or 0 stays as it is.

Only ``submit`` submissions are attempts ("Run examples" never counts), and attempts are
counted within the current review of the drill (``graders.DrillReview``: since the card last
came due). An ``internal_error`` is never the learner's fault and never rates the card.
"""

from __future__ import annotations

from dataclasses import dataclass

ACCEPTED = "accepted"
WRONG = ("wrong_answer", "runtime_error")
NO_ANSWER = ("rejected", "time_limit", "memory_limit", "output_limit")
NOT_RATED = ("internal_error", "queued", "running")
GAVE_UP = 0
AFTER_REFERENCE = 2  # below 3: a failed recall, Again to FSRS
# The best quality a review can get after opening n hints: 0 -> 5 (Easy), 1 -> 4 (Good), 2 or 3 -> 3 (Hard).
HINT_CAPS = (5, 4, 3)


@dataclass(frozen=True)
class DrillResult:
    """What the review's last graded attempt says, plus how the learner got there."""

    status: str
    attempts: int  # submit submissions in this review, this one included (>= 1)
    hidden_passed: int = 0
    reference_viewed: bool = False
    hints_opened: int = 0


def hint_cap(hints_opened: int) -> int:
    """The best quality a review can get once ``hints_opened`` hints were opened (``HINT_CAPS``)."""
    return HINT_CAPS[min(max(hints_opened, 0), len(HINT_CAPS) - 1)]


def accepted_quality(attempts: int, reference_viewed: bool, hints_opened: int = 0) -> int:
    """5 first time, 4 on the second or third, 3 after more; 2 (a failed recall) with the reference's help;
    capped by the hints opened."""
    if attempts < 1:
        raise ValueError(f"an accepted review has at least one attempt, not {attempts}")
    if reference_viewed:
        return AFTER_REFERENCE
    if attempts > 3:
        return min(3, hint_cap(hints_opened))
    return min(5 if attempts == 1 else 4, hint_cap(hints_opened))


def drill_quality(result: DrillResult) -> int:
    """The SM-2 quality for a review that ends with ``result`` (see the table in the module docstring)."""
    if result.status == ACCEPTED:
        return accepted_quality(result.attempts, result.reference_viewed, result.hints_opened)
    if result.status in WRONG:
        return 2 if result.hidden_passed > 0 else 1
    if result.status in NO_ANSWER:
        return 0
    raise ValueError(f"a {result.status!r} verdict does not rate a drill")
