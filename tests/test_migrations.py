"""A model change without its migration fails the suite, not the next deploy."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command
from django.test import TestCase


class MigrationTests(TestCase):
    def test_it_has_a_migration_for_every_model_change(self) -> None:
        out = StringIO()
        try:
            call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=StringIO())
        except SystemExit:
            self.fail(f"Missing migrations; run `manage.py makemigrations`:\n{out.getvalue()}")
