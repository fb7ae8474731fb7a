"""A teacher's words for the mistakes learners make most: one sentence added to a failed verdict as its
``hint``, naming the mistake and the fix, where the raw error or the table alone would leave them guessing.

Pure, English (``graders.web.verdict_text`` shows it in the learner's language), and read only from what
the learner may see: a visible case's error or mismatch, and the run's status; a hidden case's error stays
hidden. The fixes name ideas, not calls a drill may forbid ("subtract the maximum", not ``x.max()``),
except ``torch.no_grad()``, which no drill forbids and the in-place update needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# torch's own words (torch/csrc/autograd/VariableTypeUtils.h), as they end a visible case's error.
LEAF_IN_PLACE_ERROR = "a leaf Variable that requires grad is being used in an in-place operation"

LEAF_IN_PLACE = (
    "you updated a tensor that requires grad in place (like `w -= lr * w.grad`) while autograd was recording, "
    "and autograd refuses to change a leaf it tracks: wrap the update in `with torch.no_grad():`"
)
# The same error on a drill whose lesson is no update: the learner changed an input (or a copy that requires grad).
LEAF_CHANGED = (
    "you changed a tensor that requires grad in place (like `x += 1` or `x.clamp_(...)`) while autograd was "
    "recording, and autograd refuses to change a leaf it tracks: use the out-of-place form (`x = x + 1`, "
    "`x.clamp(...)`), which makes a new tensor"
)
OVERFLOW = (
    "your result has nan or inf where the expected one is finite: `exp` of a large value overflows (or a 0/0). "
    "Subtract the maximum along the dimension before `exp`: softmax is unchanged by that shift, and `exp` "
    "never sees a large number"
)
UNDERFLOW = (
    "your result has nan or inf where the expected one is finite: `exp` of a very negative value underflows to 0, "
    "and the `log` of that 0 (or a 0/0) is not finite. Stay in log space: subtract the maximum and take the log of "
    "the sum in one step (log-sum-exp), so nothing you divide by or take the log of is 0"
)
NONFINITE = (
    "your result has nan or inf where the expected one is finite: a value overflowed to inf or underflowed to 0 "
    "before a division or a `log`. Keep every step in range: subtract the maximum before `exp`, and take the log "
    "of a sum in one step (log-sum-exp)"
)
TIME_LIMIT = (
    "the time ran out before every case had run: the cases after it were not run, not failed. A Python loop "
    "over a tensor's elements (one tensor operation does the same work) or a loop that never ends is the "
    "usual cause"
)
HINTS = (LEAF_IN_PLACE, LEAF_CHANGED, OVERFLOW, UNDERFLOW, NONFINITE, TIME_LIMIT)
# What made a non-finite result, as the case's inputs tell (``Mismatch.nonfinite_kind``): its hint. A stored
# mismatch without the kind came from an overflow check.
NONFINITE_HINTS = {"overflow": OVERFLOW, "underflow": UNDERFLOW, "": NONFINITE}


def hint_for(
    status: str, tests: Sequence[Mapping[str, Any]], mismatch: Mapping[str, Any] | None, *, updates: bool = True
) -> str:
    """The hint for a verdict, or "" when none of the common mistakes shows. ``updates``: whether the drill's
    lesson is an update done in place (``grading.updates_in_place``): only there is ``torch.no_grad()`` the fix."""
    visible_errors = [str(t.get("message", "")) for t in tests if not t.get("hidden") and not t.get("passed")]
    if status == "runtime_error" and any(LEAF_IN_PLACE_ERROR in error for error in visible_errors):
        return LEAF_IN_PLACE if updates else LEAF_CHANGED
    if mismatch is not None and mismatch.get("nonfinite"):
        return NONFINITE_HINTS.get(str(mismatch.get("nonfinite_kind", "overflow")), NONFINITE)
    if status == "time_limit":
        return TIME_LIMIT
    return ""
