"""Coding drills: loading and validating drill files, seeded cases, constraints, comparison.

Pure Python, never Django or Celery. Loading drills needs no torch, so the web process and the
import command can read them; the parts that make or compare tensors (``generate_cases``,
``compare``) load torch on first use. ``graders.drills.grading.grade`` puts the pieces together.

Read by the web process and ``import_drills`` (the drill files), run by the grading worker (``grading``:
cases, the sandbox run, comparison, contract); ``python -m graders.drills.run`` grades files by hand.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graders.drills.constraints import Violation, check_constraints
from graders.drills.schema import (
    CaseSpec,
    CompareRule,
    Constraints,
    Drill,
    DrillError,
    DrillLimits,
    Source,
    load_drill,
    load_drills,
    parse_drill,
)

if TYPE_CHECKING:
    from graders.drills.cases import Case, generate_cases
    from graders.drills.compare import Mismatch, compare

# The bundled drills live next to the notes they come from.
DRILLS_DIR = Path(__file__).resolve().parents[2] / "notes" / "drills"

_LAZY = {"Case": "cases", "generate_cases": "cases", "Mismatch": "compare", "compare": "compare"}

__all__ = [
    "DRILLS_DIR",
    "Case",
    "CaseSpec",
    "CompareRule",
    "Constraints",
    "Drill",
    "DrillError",
    "DrillLimits",
    "Mismatch",
    "Source",
    "Violation",
    "check_constraints",
    "compare",
    "generate_cases",
    "load_drill",
    "load_drills",
    "parse_drill",
]


def __getattr__(name: str) -> Any:
    """Torch-backed names, imported when first asked for."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"graders.drills.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'graders.drills' has no attribute {name!r}")
