"""Run every attack once and print how many each layer stopped (``python -m tests.graders.attacks``)."""

from __future__ import annotations

import collections
import os
import sys

from tests.graders.attacks import ATTACKS, blocking_layer
from tests.graders.test_sandbox_attacks import prepare, run_attack


def main() -> None:
    from graders.sandbox import SandboxPool

    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    with SandboxPool(size=2) as pool:
        pool.warm()
        env = prepare()
        for attack in ATTACKS:
            result = run_attack(pool, attack, env)
            errors = [c.error or "" for c in result.cases]
            layer = blocking_layer(result.status, result.message, errors)
            table[attack.category][layer] += 1
            sys.stdout.write(f"{attack.category:20} {attack.name:28} {result.status:14} {layer}\n")
        os.unlink(env.canary_file)
    layers = ("1-static", "2-runtime", "3-process", "4-result")
    sys.stdout.write(f"\n{'category':20} {'total':>5} " + " ".join(f"{x:>10}" for x in layers) + "\n")
    for category, counts in table.items():
        row = " ".join(f"{counts[x]:>10}" for x in layers)
        sys.stdout.write(f"{category:20} {sum(counts.values()):>5} {row}\n")


if __name__ == "__main__":
    main()
