"""The learning order for new cards: stages of the bundled notes (basics first), and each learner's own order.

Plain functions for the web process and ``manage.py import_learning_order``. The queue reads the order
through ``cards.queueing`` (kept in memory with the deck, the learner's order read fresh from their
profile); these functions write it and describe it. Apps built on cards (a team) write a learner's order
through ``Profile.set_learning_order`` and name themselves as its source; cards never asks who they are.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from cards import queueing
from cards import review as reviewing
from cards.ingest.concepts import ConceptError
from cards.models import LearningStage, Profile, concept_map

DEFAULT_FILE = Path(__file__).resolve().parents[1] / "notes" / "learning-order.toml"


class OrderFileError(ValueError):
    """The learning-order file is malformed: nothing was written."""


@dataclass(frozen=True)
class StageSpec:
    slug: str
    title: str
    sections: list[dict[str, Any]]
    concepts: list[dict[str, Any]] = field(default_factory=list)  # ``[[stage.concept]]``, as the file has them


def read_order_file(path: Path) -> list[StageSpec]:
    """Every ``[[stage]]`` of the file, checked: a slug (unique), a title, sections of note + headings, and
    its concepts (``[[stage.concept]]``: each requires only concepts before it, keywords that compile)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise OrderFileError(f"{path}: {error}") from None
    stages = data.get("stage")
    if not isinstance(stages, list) or not stages:
        raise OrderFileError(f"{path}: no [[stage]] tables")
    specs, seen = [], set()
    for number, stage in enumerate(stages, start=1):
        slug, title, sections = stage.get("slug"), stage.get("title"), stage.get("sections", [])
        where = f"{path}: stage {number}"
        if not isinstance(slug, str) or not slug or not slug.replace("-", "").isalnum() or slug in seen:
            raise OrderFileError(f"{where}: a unique slug of letters, digits and '-' is needed, not {slug!r}")
        if not isinstance(title, str) or not title.strip():
            raise OrderFileError(f"{where} ({slug}): a title is needed")
        if not isinstance(sections, list) or not all(_is_section(s) for s in sections):
            raise OrderFileError(f"{where} ({slug}): each section needs a note slug and a list of headings")
        concepts = stage.get("concept", [])
        if not isinstance(concepts, list) or not all(isinstance(c, dict) for c in concepts):
            raise OrderFileError(f"{where} ({slug}): [[stage.concept]] tables are expected")
        seen.add(slug)
        specs.append(StageSpec(slug, title.strip(), sections, concepts))
    try:
        concept_map([(spec.slug, spec.concepts) for spec in specs])
    except (ConceptError, KeyError, TypeError, ValueError) as error:
        raise OrderFileError(f"{path}: {error}") from None
    return specs


def _is_section(section: object) -> bool:
    if not isinstance(section, dict) or not isinstance(section.get("note"), str):
        return False
    headings = section.get("headings")
    return isinstance(headings, list) and all(isinstance(h, str) and h.strip() for h in headings)


@dataclass(frozen=True)
class ImportReport:
    created: int
    updated: int
    removed: int


def import_stages(specs: list[StageSpec], dry_run: bool = False) -> ImportReport:
    """Make the stages those of the file, in its order: new ones created, changed ones updated, the
    rest removed (a team's order simply skips a stage that is gone). Unchanged stages are not written."""
    existing = {stage.slug: stage for stage in LearningStage.objects.all()}
    created = updated = 0
    with transaction.atomic():
        for rank, spec in enumerate(specs):
            stage = existing.pop(spec.slug, None)
            if stage is None:
                created += 1
                if not dry_run:
                    LearningStage.objects.create(
                        slug=spec.slug, title=spec.title, rank=rank, sections=spec.sections, concepts=spec.concepts
                    )
            elif (stage.title, stage.rank, stage.sections, stage.concepts) != (
                spec.title,
                rank,
                spec.sections,
                spec.concepts,
            ):
                updated += 1
                stage.title, stage.rank, stage.sections, stage.concepts = spec.title, rank, spec.sections, spec.concepts
                if not dry_run:
                    stage.save(update_fields=["title", "rank", "sections", "concepts", "updated_at"])
        if not dry_run:
            LearningStage.objects.filter(slug__in=list(existing)).delete()
    return ImportReport(created, updated, len(existing))


def ordered_stages(stage_slugs: list[str]) -> list[LearningStage]:
    """The stages as ``stage_slugs`` orders them, those it leaves out after them in the default order."""
    rank = {slug: i for i, slug in enumerate(dict.fromkeys(stage_slugs))}
    stages = LearningStage.objects.order_by("rank", "slug")
    return sorted(stages, key=lambda stage: rank.get(stage.slug, len(rank)))


@dataclass(frozen=True)
class StageRow:
    slug: str
    title: str
    cards: int  # active cards in this stage


@dataclass(frozen=True)
class LearnerOrder:
    stages: list[StageRow]  # in the order the learner's new cards follow
    unstaged: int  # active cards no stage names: they come last
    custom: bool  # the learner's order differs from the default one
    source: str  # who set it (``Profile.learning_order_source``): "" nobody, OWN_ORDER the learner, else an app's key

    @property
    def set_by_other(self) -> bool:
        """Not the default the learner has by themselves: a way back to it is offered."""
        return self.custom or self.source not in ("", Profile.OWN_ORDER)


def learner_order(user: AbstractBaseUser) -> LearnerOrder:
    """The stages in the order this learner's new cards follow (their profile's order; the default order
    when empty), each with its active card count. The deck stamp is one query (the deck itself is kept)."""
    profile = reviewing.get_profile(user)
    deck = queueing.current_deck()
    order = queueing.stage_ranks(deck.stages, queueing.stage_slugs(profile.learning_order))
    counts = [0] * (len(deck.stages) + 1)
    for place in deck.active.values():
        counts[place[0]] += 1
    ordered = sorted(range(len(deck.stages)), key=lambda index: order[index])
    rows = [StageRow(deck.stages[i].slug, deck.stages[i].title, counts[i]) for i in ordered]
    custom = ordered != list(range(len(deck.stages)))
    return LearnerOrder(rows, counts[-1], custom, profile.learning_order_source)


def use_default_order(user: AbstractBaseUser) -> None:
    """The learner goes back to the default order and keeps it: no team rewrites an order the learner chose."""
    reviewing.get_profile(user).set_learning_order([], Profile.OWN_ORDER)
