"""Run every attack once and print which layer stopped each (``python -m tests.graders.attacks``)."""

from __future__ import annotations

import collections
import os
import sys

from tests.graders.attacks import ATTACKS, LAYERS, blocking_layer
from tests.graders.test_sandbox_attacks import hidden_leaks, prepare, run_attack


def main() -> None:
    from graders.sandbox import SandboxPool

    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    with SandboxPool(size=2) as pool, SandboxPool(size=2, unguarded=True) as unguarded:
        pool.warm()
        unguarded.warm()
        env = prepare()
        for attack in ATTACKS:
            try:  # raw attacks with layers 1 and 2 off; a pair is judged by its follow-up
                mine, other = (unguarded, pool) if attack.raw else (pool, unguarded)
                results = run_attack(mine, attack, env, other=other)
                last = results[-1]
            except Exception as exc:  # noqa: BLE001 - the parent failed: that is the finding
                table[attack.category]["parent failed"] += 1
                sys.stdout.write(f"{attack.category:20} {attack.name:45} PARENT RAISED {type(exc).__name__}: {exc}\n")
                continue
            errors = [c.error or "" for c in last.cases]
            layer = blocking_layer(last.status, last.message, errors, attack)
            if attack.category == "hidden_data":  # held by the two phases and the parent's reduction, or leaked
                layer = "LEAKED" if any(hidden_leaks(r) for r in results) else "4-result"
            table[attack.category][layer] += 1
            sys.stdout.write(f"{attack.category:20} {attack.name:45} {last.status:14} {layer}\n")
        os.unlink(env.canary_file)
    columns = (*LAYERS, "parent failed")
    sys.stdout.write(f"\n{'category':20} {'total':>5} " + " ".join(f"{x:>13}" for x in columns) + "\n")
    for category, counts in table.items():
        row = " ".join(f"{counts[x]:>13}" for x in columns)
        sys.stdout.write(f"{category:20} {sum(counts.values()):>5} {row}\n")
    sys.stdout.write(f"{'all':20} {sum(sum(c.values()) for c in table.values()):>5}\n")


if __name__ == "__main__":
    main()
