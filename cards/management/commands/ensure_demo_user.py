"""Create the demo learner if it is missing, so `make run` always ends with an account to log in with.

Idempotent: run it on every start. An existing demo user keeps its reviews and settings; only its
password is put back to the printed one if it was changed, so the printed credentials always work.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from cards.models import Profile

DEFAULT_USERNAME = "demo"
DEFAULT_PASSWORD = "demo-pytorch-2026"


class Command(BaseCommand):
    help = "Create the demo learner account if it does not exist yet, and print its username and password."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=DEFAULT_USERNAME, help="The demo account's username.")
        parser.add_argument("--password", default=DEFAULT_PASSWORD, help="The demo account's password.")
        parser.add_argument("--dry-run", action="store_true", help="Say what would happen, change nothing.")

    def handle(self, *args: Any, username: str, password: str, dry_run: bool, **options: Any) -> None:
        model = get_user_model()
        user = model.objects.filter(username=username).first()
        if dry_run:
            self.stdout.write(f"Demo account {username!r} {'exists' if user else 'would be created'}.")
            return
        with transaction.atomic():
            if user is None:
                user = model.objects.create_user(username=username, password=password)
                action = "created"
            elif not user.check_password(password):
                user.set_password(password)
                user.save(update_fields=["password"])
                action = "password reset"
            else:
                action = "exists"
            Profile.objects.get_or_create(user=user)
        if options["verbosity"] >= 1:
            self.stdout.write(f"Demo account ({action}): username {username}  password {password}")
