"""Submissions and their verdicts (the grader issue fills this in)."""

from __future__ import annotations
