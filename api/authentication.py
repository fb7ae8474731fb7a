"""Token authentication that loads the learner's profile with the user, in the token's query.

Every review and queue request needs the profile (time zone, day start, daily limits); the web
gets it the same way from cards.backends.ProfileBackend. One query less on the hot path.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed


class ProfileTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        model = self.get_model()
        try:
            token = model.objects.select_related("user", "user__profile").get(key=key)
        except model.DoesNotExist:
            raise AuthenticationFailed(_("Invalid token.")) from None
        if not token.user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token
