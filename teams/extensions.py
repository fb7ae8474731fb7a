"""Where the apps built on teams add to the team page, so that teams never imports or names them.

The arrows run one way: ``courses`` knows about teams; teams knows only this registry, which it fills in its
``AppConfig.ready``. One extension point: a section of the team page (a team's course), with the function that
computes its context from the viewer's membership.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TeamSection:
    template: str  # included in the team page with ``section`` (the context below) in its context
    context: Callable[[Any], dict[str, Any]]  # the viewer's Membership -> what the template shows


_TEAM_SECTIONS: dict[str, TeamSection] = {}


def register_team_section(name: str, template: str, context: Callable[[Any], dict[str, Any]]) -> None:
    _TEAM_SECTIONS[name] = TeamSection(template, context)


def team_sections(membership: Any) -> list[tuple[str, dict[str, Any]]]:
    """(template, context) of every registered section of the team page, in registration order."""
    return [(section.template, section.context(membership)) for section in _TEAM_SECTIONS.values()]
