"""Run untrusted PyTorch submissions: restricted compile, guarded runtime, jailed warm processes.

Public API: ``SandboxPool``, ``run_once``, ``Limits``, ``RunResult``, ``CaseResult``.
See docs/security.md for the layers and what each deployment must add.  The allowlist of importable
names is data in ``graders/sandbox/allowlist.py``.  This package never imports Django or Celery, and torch
only when a run needs it (the zygote and the result decoder).

Runs in the grading worker's processes (and in the notes check, the ``graders.drills.run`` command line and
the benchmarks). A job's pool is built in one place, ``graders.warm_pool``, sized by ``GRADER_POOL_SIZE``.
"""

from __future__ import annotations

from graders.sandbox.pool import SandboxPool, run_once
from graders.sandbox.results import STATUSES, CaseResult, Limits, RunResult

__all__ = ["STATUSES", "CaseResult", "Limits", "RunResult", "SandboxPool", "run_once"]
