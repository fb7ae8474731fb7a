"""The project's grading worker (``celery -A quizsite worker``) as bench/cluster.py runs it on each "host".

It is the same Celery app, tasks and worker hooks; the one addition is a simulated device for the
device-bound measurements: when the file named by ``CLUSTER_DEVICE_FILE`` holds a number of milliseconds,
every grading job, once claimed, first holds this host's one device (a lock) for that long, as a job on a GPU
host would hold its GPU. A message whose claim fails (a duplicate the reaper sent, a job another host holds)
holds nothing, as on a GPU host. The file is read per job, so the harness switches modes without restarting
the workers.

Usage (what bench/cluster.py runs): python -m bench.cluster_worker worker -Q grade_cpu,celery -c 2 ...
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from celery.signals import task_prerun  # noqa: E402

from quizsite.celery import app  # noqa: E402

DEVICE_FILE = os.getenv("CLUSTER_DEVICE_FILE", "")
_device = threading.Lock()  # one simulated device per host, held by one job at a time
_installed = threading.Lock()


def device_ms() -> float:
    if not DEVICE_FILE:
        return 0.0
    try:
        return float(Path(DEVICE_FILE).read_text() or 0)
    except (OSError, ValueError):
        return 0.0


def held(run: Any) -> Any:
    """A job kind's ``run`` (called only under a claim) that first holds the device."""

    @functools.wraps(run)
    def hold_then_run(job: Any, pool: Any, *, worker: str) -> Any:
        hold = device_ms()
        if hold:
            with _device:
                time.sleep(hold / 1000)
        return run(job, pool, worker=worker)

    hold_then_run.holds_device = True  # type: ignore[attr-defined]
    return hold_then_run


@task_prerun.connect
def hold_device_in_every_kind(task: Any = None, **kwargs: Any) -> None:
    """Before the first job runs (the apps have registered their kinds by then), once."""
    if task is None or task.name != "jobs.tasks.run_job":
        return
    from jobs import lifecycle as jobs

    with _installed:
        for kind in jobs.kinds():
            if not getattr(kind.run, "holds_device", False):
                kind.run = held(kind.run)  # type: ignore[method-assign]


if __name__ == "__main__":
    app.worker_main(sys.argv[1:])
