"""Hostile submissions for the sandbox, grouped by category (see ``base`` for how an attack is written).

``python -m tests.graders.attacks`` runs them all and prints how many each layer stopped.
"""

from __future__ import annotations

from tests.graders.attacks.base import LAYERS, Attack, blocking_layer
from tests.graders.attacks.classic import CLASSIC
from tests.graders.attacks.hidden import HIDDEN
from tests.graders.attacks.jailed import JAILED
from tests.graders.attacks.layer2 import LAYER2
from tests.graders.attacks.round3 import ROUND3
from tests.graders.attacks.round4 import ROUND4

ATTACKS: list[Attack] = [*CLASSIC, *LAYER2, *JAILED, *ROUND3, *ROUND4, *HIDDEN]
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(a.category for a in ATTACKS))

__all__ = ["ATTACKS", "CATEGORIES", "LAYERS", "Attack", "blocking_layer"]
