"""Tokens for scripts and apps: trade a username and password for a token, or revoke it.

The browser keeps using its session; both work on every endpoint. One token per user (DRF's
authtoken), so signing in again from a second script returns the same token, and revoking it
signs every script out.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.authtoken.models import Token
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import TokenRequestSerializer, TokenSerializer
from api.throttling import AnonThrottle, UserThrottle


class TokenView(APIView):
    """`POST`: your token (created on first use); `DELETE`: revoke it."""

    throttle_classes = [AnonThrottle, UserThrottle]

    def get_permissions(self) -> list[object]:
        return [AllowAny()] if self.request.method == "POST" else [IsAuthenticated()]

    @extend_schema(
        request=TokenRequestSerializer,
        responses={200: TokenSerializer},
        auth=[],
        description="Your API token, created on first use; the same token until you revoke it.",
    )
    def post(self, request: Request) -> Response:
        serializer = TokenRequestSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        token, _ = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})

    @extend_schema(request=None, responses={204: None}, description="Revoke your token (every script signs out).")
    def delete(self, request: Request) -> Response:
        Token.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
