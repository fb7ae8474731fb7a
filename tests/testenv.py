"""Loaded with ``-p tests.testenv`` before Django settings, so tests need no exported variables."""

from __future__ import annotations

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("SITE_URL", "http://testserver")
os.environ.setdefault("ALLOWED_HOSTS", "localhost,127.0.0.1,testserver")
# Tests talk plain HTTP (test client, live server): no HTTPS redirect, cookies sent over HTTP.
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
