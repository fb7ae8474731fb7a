"""How many bits per second two runners beside each other pass through the pending-signal count
(``python -m tests.graders.attacks.channel [--bits N] [--slot-ms MS]``; docs/security.md quotes it).

The best sender and receiver we know for that count, as raw code (layers 1 and 2 assumed broken), in two
pools at the same time: the receiver first takes all of the budget it can reach but ``HEADROOM`` signals;
then, in each time slot, the sender holds ``PULSE`` signals (a 1) or none (a 0), and the receiver counts how
many it can still queue (and dequeues them again). A runner with the budget it shared with host root (before
issue 36) reads the sender's bits from that count; a runner with none reads nothing. Prints the slots' bit
error rate and the information the receiver got, the mutual information of sent and read bits per slot,
as bits per second (a receiver that reads the same whatever was sent got none).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import threading
import time
from typing import Any

from tests.graders.attacks.base import raw
from tests.graders.attacks.round4 import KERNEL

HEADROOM = 200
PULSE = 100

# Both start at ``START`` (the host's monotonic clock, which every runner shares) and keep to the slots.
SENDER = """
if not DONE:
    DONE.append(1)
    while time.monotonic() < START:
        pass
    for i, bit in enumerate(BITS):
        if bit:
            queued(PULSE)
        while time.monotonic() < START + (i + 1) * SLOT:
            pass
        drain()
return 0
"""
RECEIVER = """
if not DONE:
    held = queued(10_000_000)
    for _ in range(min(HEADROOM, held)):
        signal.sigtimedwait({SIG}, 0)
    DONE.append([held])
    while time.monotonic() < START:
        pass
    for i in range(N):
        while time.monotonic() < START + (i + 0.5) * SLOT:
            pass
        room = queued(HEADROOM)
        for _ in range(room):
            signal.sigtimedwait({SIG}, 0)
        DONE[0].append(room)
return DONE[0]
"""


def _code(body: str, **values: Any) -> str:
    settings = "".join(f"{name} = {value!r}\n" for name, value in values.items())
    return raw(body, KERNEL + settings)


def _information(sent: list[int], got: list[int]) -> float:
    """The mutual information of the sent and the read bits, per slot (bits), from their joint frequencies."""
    n = len(sent)
    joint = {
        (a, b): sum(1 for x, y in zip(sent, got, strict=True) if (x, y) == (a, b)) / n for a in (0, 1) for b in (0, 1)
    }
    sent_p = {a: joint[(a, 0)] + joint[(a, 1)] for a in (0, 1)}
    got_p = {b: joint[(0, b)] + joint[(1, b)] for b in (0, 1)}
    return sum(p * math.log2(p / (sent_p[a] * got_p[b])) for (a, b), p in joint.items() if p > 0)


def measure(sender_pool: Any, receiver_pool: Any, bits: int = 256, slot_ms: float = 10.0) -> dict[str, float]:
    """Run a sender and a receiver at once in the two pools; the bit error rate and the capacity in bits/s."""
    import torch

    from graders.sandbox import Limits

    sent = [random.getrandbits(1) for _ in range(bits)]
    slot = slot_ms / 1000
    start = time.monotonic() + 3.0  # both runners have their jobs by then
    limits = Limits(cpu_seconds=8.0 + bits * slot * 2, wall_seconds=10.0 + bits * slot * 2)
    common = {"START": start, "SLOT": slot, "HEADROOM": HEADROOM, "PULSE": PULSE}
    sender = _code(SENDER, BITS=sent, **common)
    receiver = _code(RECEIVER, N=bits, **common)
    results: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: results.update(sender=sender_pool.run(sender, "solution", [(torch.ones(1),)], limits=limits))
    )
    worker.start()
    heard = receiver_pool.run(receiver, "solution", [(torch.ones(1),)], limits=limits)
    worker.join()
    if heard.status != "ok" or not heard.cases[0].ok:
        raise RuntimeError(f"the receiver did not finish: {heard.status} {heard.message} {heard.cases}")
    held, *rooms = heard.cases[0].value
    got = [int(room < HEADROOM - PULSE // 2) for room in rooms]
    errors = sum(a != b for a, b in zip(sent, got, strict=True)) / bits
    rate = _information(sent, got) / slot
    return {"bits": bits, "slot_ms": slot_ms, "held": held, "error_rate": errors, "bits_per_second": rate}


def main() -> None:
    from graders.sandbox import SandboxPool

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, default=256)
    parser.add_argument("--slot-ms", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with SandboxPool(size=1, unguarded=True) as first, SandboxPool(size=1, unguarded=True) as second:
        first.warm()
        second.warm()
        for _ in range(args.rounds):
            found = measure(first, second, args.bits, args.slot_ms)
            sys.stdout.write(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in found.items()))
            sys.stdout.write("\n")


if __name__ == "__main__":
    main()
