"""bench/interleave.py: the trees it builds and the figures it reads from bench/grading.py's output.

The benchmark itself takes minutes a run; what can break without anyone running it is checked here: a
tree built from a revision and another revision's folder, and the three figures read from lines
printed by grading.py's own ``row`` (so a change of that table's format turns this red, not a budget check
ten minutes into a run).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from grading import row  # noqa: E402
from interleave import FIGURES, build, label  # noqa: E402


def figures(output: str) -> dict[str, float]:
    found = {name: pattern.search(output) for name, pattern in FIGURES.items()}
    return {name: float(match.group(1)) for name, match in found.items() if match is not None}


def test_it_reads_p50_throughput_and_cpu_from_the_grading_benchmarks_output() -> None:
    output = "\n".join(
        [
            "| path | n | p50 ms | p95 ms | verdicts/s |",
            "| --- | --- | --- | --- | --- |",
            row("warm: Celery + Redis + warm pool, one at a time", [10.0, 12.0, 30.0], 56.0),
            row("warm: burst of 200 committed at once", [900.0, 1300.0, 2100.0], 88.7),
            row("baseline: fresh python process per submission", [3296.3], 0.3),
            "",
            "machine CPU per verdict in the burst (all processes, both cores): 20.8 ms",
        ]
    )
    assert figures(output) == {"p50": 12.0, "burst": 88.7, "cpu": 20.8}
    assert figures(output.replace("warm: burst", "cold: burst")).keys() == {"p50", "cpu"}


def test_a_tree_is_a_revision_with_other_revisions_folders(tmp_path: Path) -> None:
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    committed = subprocess.run(["git", "-C", str(REPO), "show", "HEAD:README.md"], capture_output=True, text=True)
    root = tmp_path / "trees"
    root.mkdir()
    tree = build("HEAD:notes/drills@HEAD", root)
    assert (tree / "README.md").read_text() == committed.stdout
    assert (tree / "notes/drills").is_dir() and (tree / ".venv").resolve() == (REPO / ".venv").resolve()
    assert label("HEAD:notes/drills@HEAD") == "HEAD+notes/drills@HEAD"
    with pytest.raises(SystemExit, match="not FOLDER@REV"):
        build("HEAD:some.patch", root)
    with pytest.raises(subprocess.CalledProcessError):
        build("no-such-revision", root)
