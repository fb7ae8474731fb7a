"""The stored drill a worker grades with, kept per process while its version holds.

Reading the drill's one ``version`` column (the hash of its whole file) costs far less than reading and
building the row, and says whether the kept row is still the stored one; drill rows are never deleted
(their card and submissions protect them; ``import_drills`` retires a drill instead).

The A/B that keeps it: docs/performance.md, "Under the ORM" (bench/grading.py: ``Drill.objects.get`` on
every verdict against the kept row; bench/prepared.py, "the drill's version").
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from fastpath.prepared import Prepared
from graders.models import Drill

KEPT = 256  # drills per process, the least recently graded dropped first

_drills: OrderedDict[tuple[int, str], Drill] = OrderedDict()
_lock = threading.Lock()
_VERSION: Prepared[str] = Prepared(lambda pk: Drill.objects.filter(pk=pk).values_list("version", flat=True))


def grading_drill(pk: int) -> Drill:
    """The drill row ``pk`` as stored now: the kept one while its version is current, else read and kept."""
    version = _VERSION.first(pk=pk)
    if version is None:
        raise Drill.DoesNotExist(f"no drill {pk}")
    with _lock:
        drill = _drills.get((pk, version))
        if drill is not None:
            _drills.move_to_end((pk, version))
            return drill
    drill = Drill.objects.get(pk=pk)
    with _lock:
        _drills[(pk, drill.version)] = drill
        while len(_drills) > KEPT:
            _drills.popitem(last=False)
    return drill


def forget() -> None:
    """Drop every kept drill (tests: a rolled-back database reuses ids, so an id and version can name another row)."""
    with _lock:
        _drills.clear()
