"""Helpers shared by the import tests: write note files into a folder, and run ``import_notes``."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

from django.core.management import call_command


def write_file(folder: Path, name: str, content: str | bytes) -> Path:
    """``folder/name`` with ``content`` (bytes as they are, text as UTF-8), its folders made."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def run_import(*paths: Path | str, **options: Any) -> tuple[str, str]:
    """``manage.py import_notes PATHS``: (stdout, stderr)."""
    out, err = StringIO(), StringIO()
    call_command("import_notes", *[str(p) for p in paths], stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()
