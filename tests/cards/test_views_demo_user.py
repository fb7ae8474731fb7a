"""`manage.py ensure_demo_user`: run on every start, always leaves a working demo login."""

from __future__ import annotations

from io import StringIO

from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.test import TestCase

from cards.management.commands.ensure_demo_user import DEFAULT_PASSWORD
from cards.models import Profile


def run(*args: str) -> str:
    out = StringIO()
    call_command("ensure_demo_user", *args, stdout=out)
    return out.getvalue()


class EnsureDemoUserTests(TestCase):
    def test_it_creates_the_demo_user_once_and_prints_the_login(self) -> None:
        self.assertIn(f"username demo  password {DEFAULT_PASSWORD}", run())
        self.assertIn("(exists)", run())
        self.assertEqual(get_user_model().objects.filter(username="demo").count(), 1)
        self.assertTrue(Profile.objects.filter(user__username="demo").exists())
        self.assertIsNotNone(authenticate(username="demo", password=DEFAULT_PASSWORD))

    def test_it_puts_a_changed_password_back(self) -> None:
        run()
        user = get_user_model().objects.get(username="demo")
        user.set_password("something else")
        user.save()
        self.assertIn("(password reset)", run())
        self.assertIsNotNone(authenticate(username="demo", password=DEFAULT_PASSWORD))

    def test_it_changes_nothing_on_a_dry_run(self) -> None:
        self.assertIn("would be created", run("--dry-run"))
        self.assertFalse(get_user_model().objects.exists())
