"""Object-level access. Querysets are already filtered on the requester (so others' rows are 404,
never 403); this check is the second lock, in case a view ever fetches an object another way."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission
from rest_framework.request import Request


class IsOwner(BasePermission):
    """The object's ``user_id`` must be the requester's; anyone else is told it does not exist."""

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        if getattr(obj, "user_id", None) != request.user.pk:
            raise NotFound()
        return True
