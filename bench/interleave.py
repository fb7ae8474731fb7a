"""The grading benchmark for several trees in the same minutes, interleaved: the way to check a budget such
as "must not cost more than 20 % of p50 or throughput" on a machine whose figures drift by that much
between runs minutes apart.

    .venv/bin/python bench/interleave.py 852b9b9 HEAD                     # three rounds, issue 13's command
    .venv/bin/python bench/interleave.py 852b9b9 HEAD "HEAD:notes/drills@852b9b9" --rounds 5

A tree is ``REV`` (``git archive``) and may end in ``:FOLDER@REV`` (that folder taken from another
revision: the same drills for code that changed them). An experiment (a part of a change taken out) is a
commit of its own, on a branch, named by its revision. Each tree is unpacked under a temporary folder and
uses this checkout's ``.venv``. Every round runs each tree once, the order rotated from round to round; the
table gives each run's one-at-a-time p50, burst verdicts/s, CPU per verdict (the machine's, and the grading
path's own processes' alone) and the grading stage's median, then the medians and each tree's change
against the first.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# issue 13's command
COMMAND = "bench/grading.py --queues grade_cpu,grade_gpu --learners 1 --sequential 150 --burst 200 --baseline 1".split()
FIGURES = {
    "p50": re.compile(r"^\| warm: Celery[^|]*\| \d+ \| ([\d.]+) \|", re.M),
    "burst": re.compile(r"^\| warm: burst[^|]*\|[^|]*\|[^|]*\|[^|]*\| ([\d.]+) \|", re.M),
    "cpu": re.compile(r"machine CPU per verdict in the burst[^:]*: ([\d.]+) ms"),
    # The grading path's own processes only, and the grading stage alone: on a host shared with other work the
    # machine's CPU counts the neighbours too, and these two move far less with them.
    "own": re.compile(r"^\| sum of the grading path's own processes \| ([\d.]+) \|", re.M),
    "grading": re.compile(r"^\| grading \(sandbox run \+ compare\) \| ([\d.]+) \|", re.M),
}


def build(spec: str, root: Path) -> Path:
    """Unpack ``REV[:FOLDER@REV]...`` into a folder of its own under ``root``."""
    parts = spec.split(":")
    rev, extras = parts[0], parts[1:]
    for extra in extras:
        if "@" not in extra:
            raise SystemExit(f"{spec}: {extra!r} is not FOLDER@REV")
    tree = root / re.sub(r"[^\w.-]", "_", spec)
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    for extra in extras:
        folder, other = extra.split("@", 1)
        shutil.rmtree(tree / folder, ignore_errors=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", other, folder], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    (tree / ".venv").symlink_to(REPO / ".venv")
    return tree


def label(spec: str) -> str:
    """``HEAD:notes/drills@852b9b9`` as ``HEAD+notes/drills@852b9b9``: the table's name for a tree."""
    return "+".join(spec.split(":"))


def run(tree: Path) -> dict[str, float]:
    out = subprocess.run(
        [str(tree / ".venv/bin/python"), *COMMAND], cwd=tree, capture_output=True, text=True, timeout=900
    ).stdout
    found = {name: pattern.search(out) for name, pattern in FIGURES.items()}
    missing = [name for name, match in found.items() if match is None]
    if missing:
        raise SystemExit(f"{tree.name}: no {', '.join(missing)} in its output:\n{out[-2000:]}")
    return {name: float(match.group(1)) for name, match in found.items() if match is not None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="REV, optionally followed by :FOLDER@REV")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-interleave-"))
    try:
        trees = {spec: build(spec, root) for spec in args.trees}
        runs: dict[str, list[dict[str, float]]] = {spec: [] for spec in args.trees}
        print(f"started {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n")
        print("| round | tree | p50 ms | burst verdicts/s | CPU ms per verdict | own CPU ms | grading ms |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for round_ in range(args.rounds):
            order = args.trees[round_ % len(args.trees) :] + args.trees[: round_ % len(args.trees)]
            for spec in order:
                figures = run(trees[spec])
                runs[spec].append(figures)
                cells = " | ".join(f"{figures[name]:.1f}" for name in FIGURES)
                print(f"| {round_ + 1} | {label(spec)} | {cells} |", flush=True)
        print(f"\nended {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
        first = label(args.trees[0])
        medians = {spec: {k: statistics.median(r[k] for r in runs[spec]) for k in FIGURES} for spec in args.trees}
        print("\n| tree | median p50 ms | median burst/s | median CPU ms | median own CPU ms | median grading ms |")
        print("| --- | --- | --- | --- | --- | --- |")
        for spec, m in medians.items():
            cells = [f"{m[name]:.1f} ({m[name] / medians[first][name] - 1:+.0%})" for name in FIGURES]
            print(f"| {label(spec)} | {' | '.join(cells)} |")
        print(f"\n(each figure's change against {first} in brackets)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
