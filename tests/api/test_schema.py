"""The OpenAPI schema: valid, warning-free, equal to the committed docs/openapi.yaml, served with
interactive docs whose assets come from drf-spectacular-sidecar (no CDN)."""

from __future__ import annotations

import re
import tempfile
from io import StringIO
from pathlib import Path

import yaml
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.db import connection
from django.test import SimpleTestCase
from django.urls import URLPattern, URLResolver, get_resolver

from tests.api.base import ApiTestCase

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "docs" / "openapi.yaml"
# Integer bounds in the schema come from the database backend's column ranges, so the committed
# schema is PostgreSQL's (production); on SQLite only its validity is checked.
REGENERATE = (
    "DEBUG=1 DATABASE_URL=postgres://localhost/quizsite "
    ".venv/bin/python manage.py spectacular --validate --fail-on-warn --file docs/openapi.yaml"
)


def _generate(tmp: Path) -> str:
    out = tmp / "openapi.yaml"
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(out), stdout=StringIO(), stderr=StringIO()
    )
    return out.read_text()


def _v1_routes() -> set[str]:
    """Every /api/v1/ route as an OpenAPI path template (`<slug:slug>` -> `{slug}`)."""
    routes: set[str] = set()

    def walk(patterns: list[URLPattern | URLResolver], prefix: str) -> None:
        for p in patterns:
            route = prefix + str(p.pattern)
            if isinstance(p, URLResolver):
                walk(p.url_patterns, route)
            elif route.startswith("api/v1/") and "^" not in route:
                routes.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))

    walk(get_resolver().url_patterns, "")
    return routes


class SchemaTests(SimpleTestCase):
    def test_it_generates_a_valid_schema_equal_to_the_committed_one(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            generated = _generate(Path(tmp))  # --validate --fail-on-warn: raises on an invalid schema
        if connection.vendor != "postgresql":
            self.skipTest("the committed schema holds PostgreSQL's integer bounds; compared on PostgreSQL")
        self.assertEqual(
            generated, COMMITTED.read_text(), f"docs/openapi.yaml is stale; regenerate it with:\n{REGENERATE}"
        )

    def test_it_documents_every_v1_route(self) -> None:
        paths = set(yaml.safe_load(COMMITTED.read_text())["paths"])
        self.assertEqual(paths, _v1_routes())

    def test_it_serves_the_interactive_docs_from_local_static_files(self) -> None:
        finder_path = finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
        self.assertIsNotNone(finder_path)
        response = self.client.get("/api/docs/")
        self.assertEqual(response.status_code, 200)
        html = response.content.decode()
        self.assertIn("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js", html)
        self.assertIn("/api/schema/", html)
        self.assertNotRegex(html, r"https?://")
        self.assertNotIn("cdn", html.lower())


class SchemaEndpointTests(ApiTestCase):
    def test_it_serves_the_schema_without_signing_in(self) -> None:
        response = self.client_class().get("/api/schema/", {"format": "json"})
        self.assertEqual(response.status_code, 200)
        schema = response.json()
        self.assertTrue(schema["openapi"].startswith("3."))
        self.assertEqual(set(schema["paths"]), set(yaml.safe_load(COMMITTED.read_text())["paths"]))
