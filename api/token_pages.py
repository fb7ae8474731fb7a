"""The API token page in settings (`/settings/token/`): create, see once, replace and revoke the token a
script sends as `Authorization: Token …`, without posting a password to the API.

Built on DRF's authtoken, which api.authentication checks: one token per learner, so "create" when one
exists replaces it (every script using the old one is signed out). The key is shown only in the answer
to the POST that made it, never stored anywhere else and never shown again by a GET; that answer is not
cached. Run by the web process.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from rest_framework.authtoken.models import Token


def _page(request: HttpRequest, new_key: str = "") -> HttpResponse:
    token = Token.objects.filter(user=request.user).first()
    return render(request, "api/tokens.html", {"token": token, "new_key": new_key})


@login_required
@require_GET
def tokens(request: HttpRequest) -> HttpResponse:
    """When the learner's token was made, if there is one; never the key itself."""
    return _page(request)


@never_cache
@login_required
@require_POST
def create(request: HttpRequest) -> HttpResponse:
    """A new token in place of any old one, its key shown in this answer only."""
    with transaction.atomic():
        Token.objects.filter(user=request.user).delete()
        token = Token.objects.create(user=request.user)
    return _page(request, new_key=token.key)


@login_required
@require_POST
def revoke(request: HttpRequest) -> HttpResponse:
    deleted, _rows = Token.objects.filter(user=request.user).delete()
    if deleted:
        messages.success(request, _("Token revoked: scripts that used it are signed out."))
    return redirect("tokens:page")
