"""Imports run one way: no circle between the project's modules, function-level imports included.

A circle closed by an import inside a function still ties two modules together (and hides the order
they must load in); DESIGN.md wants views and tasks to call domain functions, and those the pure modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("quizsite", "fastpath", "jobs", "cards", "graders", "outputs", "teams", "courses", "api")
# The pure cores import nothing from Django or Celery (DESIGN.md: "the pure modules").
PURE = ("cards.scheduling", "cards.ingest", "graders.sandbox", "jobs.status", "graders.drills.schema")
PURE += ("graders.authoring.document", "graders.authoring.statement", "graders.authoring.checking")
PURE += ("graders.difficulty.rasch",)
PURE += ("graders.drills.solution_key",)


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            # makemessages (tests/test_i18n.py, on another xdist worker) writes ``page.html.py`` beside each
            # template while it runs: no module's name has a dot in it.
            if "migrations" in path.parts or "." in path.stem:
                continue
            name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            modules[name] = path
    return modules


def imported_names(module: str, path: Path) -> set[str]:
    """Every module this one imports, at any level (``from pkg import sub`` counts as ``pkg.sub``)."""
    names: set[str] = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                names.add(f"{base}.{alias.name}")
            names.add(base)
    return names


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = {name for name in imported_names(module, path) if name in modules and name != module}
        # ``from graders.sandbox import policy`` is an import of graders.sandbox.policy, not of the package.
        graph[module] = {name for name in targets if not any(t.startswith(name + ".") for t in targets)}
    return graph


def find_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    circles, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return circles


def test_it_finds_a_circle_when_there_is_one() -> None:
    assert find_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]


def test_it_has_no_import_circle() -> None:
    assert find_circles(import_graph()) == []


@pytest.mark.parametrize("pure", PURE)
def test_it_keeps_the_pure_modules_free_of_django_and_celery(pure: str) -> None:
    offenders = [
        f"{module} imports {name}"
        for module, path in project_modules().items()
        if module == pure or module.startswith(pure + ".")
        for name in imported_names(module, path)
        if name.split(".")[0] in ("django", "celery", "rest_framework")
    ]
    assert offenders == []


# Apps and the apps they are built on: an app may use those below it, never those above.
BUILT_ON = {
    "jobs": (),
    "cards": ("jobs",),
    "graders": ("jobs", "cards"),
    "outputs": ("jobs", "cards", "graders"),
    "teams": ("jobs", "cards", "graders"),
    "courses": ("jobs", "cards", "graders", "teams", "outputs"),
}


@pytest.mark.parametrize("app", sorted(BUILT_ON))
def test_it_keeps_each_app_ignorant_of_the_apps_built_on_it(app: str) -> None:
    """Not even by name: no import, no ``importlib`` string, no template path or URL name of an app above."""
    above = "|".join(other for other, below in BUILT_ON.items() if app in below)
    if not above:
        return
    patterns = {
        ".py": re.compile(rf"(?:\b(?:from|import)\s+|[\"'])(?:{above})[.:/]|get_model\(\s*[\"'](?:{above})[\"']"),
        ".html": re.compile(rf"[\"'](?:{above})[:/]"),
    }
    offenders = [
        f"{path.relative_to(REPO)}: {match.group(0)!r}"
        for path in sorted((REPO / app).rglob("*"))
        if path.suffix in patterns and "migrations" not in path.parts
        for match in patterns[path.suffix].finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_it_would_see_an_app_named_in_a_string() -> None:
    pattern = re.compile(r"(?:\b(?:from|import)\s+|[\"'])(?:graders)[.:/]")
    assert pattern.search('importlib.import_module("graders.models")')
    assert pattern.search("{% url 'graders:for_card' card.uuid %}")
    assert pattern.search("from graders.models import Submission")
    assert not pattern.search("examples_row.outputs.ready")


def reaches(graph: dict[str, set[str]], roots: list[str]) -> set[str]:
    """Every module the roots import, directly or through others."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        for target in graph.get(stack.pop(), ()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def test_outputs_builds_on_the_jobs_app_not_on_graders() -> None:
    """Issue 40: an app with a job kind of its own builds on the ``jobs`` app at the base (and the pure
    sandbox), never on a package inside another app: not the drill pages, the kinds, the rating or the drill
    files, nor the graders' worker or pool, even through another module."""
    graph = import_graph()
    reached = reaches(graph, [name for name in graph if name.split(".")[0] == "outputs"])
    beyond = sorted(
        name for name in reached if name.split(".")[0] == "graders" and not name.startswith("graders.sandbox.")
    )
    assert beyond == []
    assert "jobs.lifecycle" in reached  # it does build on the jobs app


def test_reaches_follows_imports_through_other_modules() -> None:
    graph = {"outputs.a": {"jobs.x"}, "jobs.x": {"graders.web.views"}, "graders.web.views": set()}
    assert reaches(graph, ["outputs.a"]) == {"jobs.x", "graders.web.views"}


# Every top-level package that is an app (or a library an app builds on: the sandbox, the jobs), found on disk
# so that a package moved to the top level is covered the day it lands.
APPS = tuple(
    sorted(
        p.name
        for p in REPO.iterdir()
        if (p / "__init__.py").exists() and p.name not in ("quizsite", "fastpath", "tests")
    )
)
# Where Django is told what the apps are: the settings (INSTALLED_APPS, the beat schedule) and the root URLconf.
COMPOSITION_ROOTS = ("quizsite/settings.py", "quizsite/urls.py")


def test_it_keeps_the_project_package_below_every_app() -> None:
    """quizsite/ (settings, urls, health, celery) imports no app, not even through another module (the fast
    path's modules it uses read no app's table): apps register what they add to it (health checks:
    ``quizsite.health.register_check``)."""
    graph = import_graph()
    offenders = sorted(
        f"{module} -> {target}"
        for module in graph
        if module.split(".")[0] == "quizsite"
        for target in reaches(graph, [module])
        if target.split(".")[0] in APPS
    )
    assert offenders == []


def test_it_keeps_the_project_package_from_naming_an_app_but_where_django_wires_them() -> None:
    """No ``importlib`` string, ``get_model`` or dotted path of an app in quizsite/ beyond the settings and the
    root URLconf (a string import is an arrow up that the import graph cannot see)."""
    pattern = re.compile(
        rf"(?:\b(?:from|import)\s+|[\"'])(?:{'|'.join(APPS)})[.:/]|get_model\(\s*[\"'](?:{'|'.join(APPS)})[\"']"
    )
    offenders = [
        f"{path.relative_to(REPO)}: {match.group(0)!r}"
        for path in sorted((REPO / "quizsite").rglob("*.py"))
        if path.relative_to(REPO).as_posix() not in COMPOSITION_ROOTS
        for match in pattern.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_fast_path_builds_on_the_models_only() -> None:
    """fastpath/ reads tables: of the apps it imports their models and nothing else (no views, no services),
    so every app may use it and it stays the floor it is."""
    graph = import_graph()
    offenders = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == "fastpath"
        for target in targets
        if target.split(".")[0] in APPS and target.split(".")[1:] != ["models"]
    )
    assert offenders == []
    assert graph["fastpath.prepared"] == set()  # the engine reads no app at all: quizsite may use it


def test_it_keeps_the_api_and_the_drill_pages_apart() -> None:
    """Issue 40: the API and the drill pages share one use-case layer (``graders.attempts``) and never each
    other: no module of ``api`` imports the HTML package ``graders.web``, none of ``graders.web`` imports ``api``."""
    modules = project_modules()
    offenders = sorted(
        f"{module} imports {name}"
        for module, path in modules.items()
        for name in imported_names(module, path)
        if (module.split(".")[0] == "api" and (name == "graders.web" or name.startswith("graders.web.")))
        or (module.startswith("graders.web") and name.split(".")[0] == "api")
    )
    assert offenders == []
    assert "graders.attempts.actions" in imported_names("api.grader_views", modules["api.grader_views"])
    assert "graders.attempts.actions" in imported_names("graders.web.views", modules["graders.web.views"])
