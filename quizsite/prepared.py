"""``Prepared`` and the writes moved to ``fastpath.prepared`` (issue 40 item 4); the job lifecycle still
imports the writes from here until its move to the jobs app lands, then this module goes."""

from __future__ import annotations

from fastpath.prepared import update_returning, update_where

__all__ = ["update_returning", "update_where"]
