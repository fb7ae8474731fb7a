"""Markdown notes -> card specs, with no Django import (see DESIGN.md: pure modules)."""

from __future__ import annotations

from cards.ingest.parser import CardSpec, ParsedNote, parse_note
from cards.ingest.slugs import AnchorAllocator, heading_anchor, note_slug

__all__ = ["AnchorAllocator", "CardSpec", "ParsedNote", "heading_anchor", "note_slug", "parse_note"]
