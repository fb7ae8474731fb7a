"""Every module, file, model and function the docs name in backticks exists: a doc that names a module
renamed or removed misleads its reader (issue 40 item 5). Checked: README.md and docs/*.md; a name counts
when it starts with one of the repository's top-level packages or folders."""

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
# Celery's registered names (``@shared_task(name="jobs.tasks.reap")``) are names the docs may give too.
TASKS = {
    match
    for package in PACKAGES
    for source in (ROOT / package).rglob("*.py")
    if "." not in source.stem  # not makemessages' passing ``page.html.py`` files (tests/test_i18n.py)
    for match in re.findall(r"""name=["']([\w.]+)["']""", source.read_text())
}
PERMISSION = re.compile(r"^(add|change|delete|view)_(\w+)$")


def named(text: str) -> list[str]:
    """Backticked names that start at a top-level package or folder, cut at a call, a subscript or a colon."""
    names = []
    for token in re.findall(r"`([^`\s]+)`", text):
        name = re.split(r"[(\[:]", token)[0].rstrip("/.,")
        if re.search(r"[<>*{}$]", name):
            continue
        if ("/" in name and name.split("/")[0] in FOLDERS) or name.split(".")[0] in PACKAGES:
            names.append(name)
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


def exists(name: str) -> bool:
    if "/" in name:
        return (ROOT / name).exists()
    if name in TASKS:
        return True
    parts = name.split(".")
    source, rest = module_source(parts)
    if not rest:
        return True
    if source is not None and re.search(rf"\b{re.escape(rest[0])}\b", source.read_text()):
        return True  # defined, imported or assigned there
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
    missing = sorted({name for name in named(doc.read_text()) if not exists(name)})
    assert missing == [], f"{doc.relative_to(ROOT)} names what the repository does not have: {missing}"


def test_it_sees_a_name_that_is_gone() -> None:
    assert exists("graders.drills.grading.grade") and exists("cards.ReviewLog") and exists("graders/sandbox")
    assert not exists("graders.drills.grading.no_such_function")
    assert not exists("graders/drills/hints.py") and not exists("cards.NoSuchModel")
