"""Where the apps built on graders add to the drill page, so that graders never imports or names them.

The arrows run one way: ``teams`` knows about graders; graders knows only this registry, which teams fills in its
``AppConfig.ready``. One extension point: a part of the drill page under the verdict (a team's solutions and
comments, issue 41), with the function that computes its context from the learner and the drill.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DrillPart:
    template: str  # included in the drill page with ``part`` (the context below) in its context
    context: Callable[[Any, Any], dict[str, Any] | None]  # (learner, drill) -> what it shows; None: nothing


_DRILL_PARTS: dict[str, DrillPart] = {}


def register_drill_part(name: str, template: str, context: Callable[[Any, Any], dict[str, Any] | None]) -> None:
    _DRILL_PARTS[name] = DrillPart(template, context)


def drill_parts(user: Any, drill: Any) -> list[tuple[str, dict[str, Any]]]:
    """(template, context) of every registered part that has something to show, in registration order."""
    parts = []
    for part in _DRILL_PARTS.values():
        context = part.context(user, drill)
        if context is not None:
            parts.append((part.template, context))
    return parts
