"""What writing a course keeps between requests (the tables of the authoring flow)."""

from __future__ import annotations
