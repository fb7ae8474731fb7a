"""Grade files against a drill from the command line, through the sandbox.

For drill authors and for checking a drill by hand: ``python -m graders.drills.run --drill SLUG FILE [FILE ...]``
prints one JSON object per file (``file``, ``status``, ``tests`` and the rest of the verdict). The exit
code is 0 whatever the verdicts are; it is non-zero only for a usage error, an unknown drill or a drill
folder that does not load, so scripts can tell "the tool failed" from "the code is wrong".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graders.drills import DRILLS_DIR, DrillError, load_drills

EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m graders.drills.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--drill", required=True, help="the drill's slug, e.g. reverse-1d")
    parser.add_argument("files", nargs="+", type=Path, help="Python files to grade")
    parser.add_argument("--drills-dir", type=Path, default=DRILLS_DIR, help="where the drill files live")
    parser.add_argument("--seed", type=int, default=0, help="seed of the hidden cases (default 0)")
    parser.add_argument("--visible-only", action="store_true", help="run only the examples shown to learners")
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None, help="sandbox device (default: drill's)")
    return parser


def _sandbox_pool(device: str) -> Any:
    from graders.sandbox import SandboxPool

    return SandboxPool(size=1, device=device)


def main(argv: list[str] | None = None, *, make_runner: Callable[[str], Any] = _sandbox_pool) -> int:
    """Steps: 1. arguments and drill  2. one runner for all files  3. one JSON line per file."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        drills = load_drills(args.drills_dir)
    except DrillError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    drill = drills.get(args.drill)
    if drill is None:
        known = ", ".join(sorted(drills)) or "none"
        print(f"error: unknown drill {args.drill!r} (known drills: {known})", file=sys.stderr)
        return EXIT_USAGE
    missing = [str(path) for path in args.files if not path.is_file()]
    if missing:
        print(f"error: no such file: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    from graders.drills.grading import grade

    device = args.device or ("cuda" if drill.device == "cuda" and _has_cuda() else "cpu")
    runner = make_runner(device)
    try:
        for path in args.files:
            code = path.read_text(encoding="utf-8", errors="replace")
            verdict = grade(drill, code, seed=args.seed, runner=runner, visible_only=args.visible_only)
            print(json.dumps({"file": str(path), **verdict}, ensure_ascii=False), flush=True)
    finally:
        close = getattr(runner, "close", None)
        if close is not None:
            close()
    return 0


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    sys.exit(main())
