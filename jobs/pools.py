"""This process's sandbox pool, as the app that owns the sandbox provides it.

A job kind runs in a warm sandbox pool, built once per process. The pool is the sandbox's (``graders``
builds it: ``graders.warm_pool``); this app sits below every other and names none of them, so the app that
owns the pool registers how to get one (``GradersConfig.ready``: ``provide(warm_pool.get_pool)``) and the
job task and the notes check ask here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_source: Callable[[str | None], Any] | None = None


def provide(source: Callable[[str | None], Any]) -> None:
    """Register how this process gets its pool: ``source(device)``, ``device`` None for the worker's own."""
    global _source
    _source = source


def get_pool(device: str | None = None) -> Any:
    """This process's warm pool (on ``device``, by default the worker's), from the registered source."""
    if _source is None:
        raise RuntimeError("no sandbox pool was provided (jobs.pools.provide): is the graders app installed?")
    return _source(device)
