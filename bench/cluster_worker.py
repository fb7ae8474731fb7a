"""The project's grading worker (``celery -A quizsite worker``) as bench/cluster.py runs it on each "host".

It is the same Celery app, tasks and worker hooks; the one addition is a simulated device for the
device-bound measurements: when the file named by ``CLUSTER_DEVICE_FILE`` holds a number of milliseconds,
every grading job first holds this host's one device (a lock) for that long, as a job on a GPU host would
hold its GPU. The file is read per job, so the harness switches modes without restarting the workers.

Usage (what bench/cluster.py runs): python -m bench.cluster_worker worker -Q grade_cpu,celery -c 2 ...
"""

from __future__ import annotations

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


def device_ms() -> float:
    if not DEVICE_FILE:
        return 0.0
    try:
        return float(Path(DEVICE_FILE).read_text() or 0)
    except (OSError, ValueError):
        return 0.0


@task_prerun.connect
def hold_device(task: Any = None, **kwargs: Any) -> None:
    hold = device_ms()
    if hold and task is not None and task.name == "graders.tasks.run_job":
        with _device:
            time.sleep(hold / 1000)


if __name__ == "__main__":
    app.worker_main(sys.argv[1:])
