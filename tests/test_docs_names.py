"""Every module, file, model and function the docs name in backticks exists: a doc that names a module
renamed or removed misleads its reader (issue 40 item 5). Checked: README.md and docs/*.md (not docs/history/,
the dated record, whose names are those of their day); a name counts when it starts with one of the
repository's top-level packages or folders, in backticks or anywhere in a fenced block (the diagrams)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md")])
PACKAGES = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
RUNTIME = {"var", "static", "node_modules"}  # made by `make run` and the build, named by the docs as places
FOLDERS = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")} - RUNTIME
# Celery's registered names (``@shared_task(name="jobs.tasks.reap")``) are names the docs may give too: as
# they are where the name's module exists (``teams.tasks.rebuild_boards``), else called a task in the text
# (a name whose module does not exist, said plainly to be a task, is not a module a reader would look for).
TASKS = {
    match
    for package in PACKAGES
    for source in (ROOT / package).rglob("*.py")
    if "." not in source.stem  # not makemessages' passing ``page.html.py`` files (tests/test_i18n.py)
    for match in re.findall(r"""name=["']([\w.]+)["']""", source.read_text())
}
PERMISSION = re.compile(r"^(add|change|delete|view)_(\w+)$")
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
BARE = re.compile(r"(?<![\w/.`-])([A-Za-z_][\w.]*\.[A-Za-z_]\w*|[\w-]+/[\w./-]*)")


def named(text: str) -> list[tuple[str, str]]:
    """Each name that starts at a top-level package or folder, cut at a call, a subscript or a colon, with
    the text before it on its line: backticked names, and bare ones inside fenced blocks."""
    found = [(match.group(1), match.start()) for match in re.finditer(r"`([^`\s]+)`", text)]
    for block in FENCED.finditer(text):
        found += [(match.group(1), block.start(1) + match.start()) for match in BARE.finditer(block.group(1))]
    names = []
    for token, at in found:
        name = re.split(r"[(\[:]", token)[0].rstrip("/.,")
        if re.search(r"[<>*{}$]", name):
            continue
        if ("/" in name and name.split("/")[0] in FOLDERS) or name.split(".")[0] in PACKAGES:
            names.append((name, text[text.rfind("\n", 0, at) + 1 : at]))
    return names


def module_source(parts: list[str]) -> tuple[Path | None, list[str]]:
    """The longest prefix of ``parts`` that is a module or package (its source file), and the rest."""
    for end in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:end])
        for source in (base.with_suffix(".py"), base / "__init__.py"):
            if source.exists():
                return source, parts[end:]
        if base.is_dir():
            return None, parts[end:]
    return None, parts


def defines(source: str, name: str) -> bool:
    """``name`` defined, assigned, imported or listed in ``__all__`` in ``source`` (not merely mentioned: a
    package's docstring names its modules' contents too)."""
    n = re.escape(name)
    patterns = (
        rf"^\s*(async\s+def|def|class)\s+{n}\b",
        rf"^\s*{n}\s*(:[^\n=]*)?=",
        rf"^\s*{n}\s*:",
        rf"\bimport\s+[^\n(]*\b{n}\b",
        rf"\bimport\s*\([^)]*\b{n}\b",
        rf"\bas\s+{n}\b",
        rf"[\"']{n}[\"']",
    )
    return any(re.search(pattern, source, re.M) for pattern in patterns)


def exists(name: str, before: str = "") -> bool:
    """Whether ``name`` is a file, a module or what one defines, a model or its field, or a Celery task
    (``before``: the text before it on its line)."""
    if "/" in name:
        return (ROOT / name).exists()
    parts = name.split(".")
    source, rest = module_source(parts)
    if name in TASKS and ((source is not None and len(rest) == 1) or re.search(r"\btask\W*$", before)):
        return True  # a task registered under its module's name, or one the text calls a task
    if not rest:
        return True
    if source is not None and defines(source.read_text(), rest[0]):
        return True
    if len(parts) >= 2 and parts[0] in {config.label for config in apps.get_app_configs()}:
        app = apps.get_app_config(parts[0])
        if re.fullmatch(r"\d{4}\w*", parts[1]):
            return any((Path(app.path) / "migrations").glob(f"{parts[1]}*.py"))
        permission = PERMISSION.match(parts[1])
        model_name = permission.group(2) if permission else parts[1]
        try:
            model = app.get_model(model_name)
        except LookupError:
            return False
        return len(parts) == 2 or any(f.name == parts[2] for f in model._meta.get_fields()) or hasattr(model, parts[2])
    return False


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_every_name_a_doc_gives_in_backticks_exists(doc: Path) -> None:
    missing = sorted({name for name, before in named(doc.read_text()) if not exists(name, before)})
    assert missing == [], f"{doc.relative_to(ROOT)} names what the repository does not have: {missing}"


def test_it_sees_a_name_that_is_gone() -> None:
    assert exists("graders.drills.grading.grade") and exists("cards.ReviewLog") and exists("graders/sandbox")
    assert not exists("graders.drills.grading.no_such_function")
    assert not exists("graders/drills/hints.py") and not exists("cards.NoSuchModel")
    assert exists("graders.tasks.refit_difficulty", "the refit (task ")
    assert not exists("graders.tasks.refit_difficulty", "refitted by ")


def test_it_reads_names_in_backticks_and_in_diagrams() -> None:
    text = "Run `graders.jobs.tasks` and `cards/x.py:12`.\n\n```\n web ──> graders.web.views.x  bench/grading.py\n```\n"
    assert named(text) == [
        ("graders.jobs.tasks", "Run "),
        ("cards/x.py", "Run `graders.jobs.tasks` and "),
        ("graders.web.views.x", " web ──> "),
        ("bench/grading.py", " web ──> graders.web.views.x  "),
    ]
