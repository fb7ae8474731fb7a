#!/usr/bin/env python
"""Django's command-line utility for quizsite."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizsite.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A fresh clone's first command: say what to set, not a traceback through Django's internals.
        sys.stderr.write(
            f"quizsite is not configured: {exc}\n"
            "For development run with DEBUG=1 (as `make run` does); in production set SECRET_KEY and the other "
            "variables README.md lists.\n"
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
