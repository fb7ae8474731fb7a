"""The login backend, joined with the learner's profile.

Every review request needs the profile (time zone, day start, limits) before it can pick a
card; loading it with the user saves one query on each hot request.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend


class ProfileBackend(ModelBackend):
    def get_user(self, user_id: Any) -> Any:
        model = get_user_model()
        try:
            user = model._default_manager.select_related("profile").get(pk=user_id)
        except model.DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None
