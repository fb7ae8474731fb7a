"""The fast path is contained: only ``fastpath/`` goes under the ORM or keeps what it read in a process.

Everywhere else in the app code, this fails on a database cursor (``cursor(``), ``.raw(``, ``RawSQL`` or
``.extra(``, the SQL compiler (``get_compiler``, ``sql_with_params``), a compiled statement (``Prepared(``),
a raw SQL string, and a module-level cache: a ``functools.cache``/``lru_cache`` function, a module-level
dict filled at run time by anything but a ``register*`` function (a registry, filled as the apps load, is
not a cache), or a module global a function sets (``global _kept``). What is left elsewhere is named below
with the reason it is not the fast path's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HOME = "fastpath"
NOT_APP_CODE = {"tests"}

# Not reads of this project's database, so not the fast path's; named by function or variable, so a module's
# move does not open a gap. A new entry needs the reason it is no process cache of what the database holds.
KEPT_ELSEWHERE = {
    # Pure: the same arguments give the same answer for the life of the process (parsers, lexers, ASTs).
    "_renderer": "the Markdown renderer, built once",
    "_renderer_without_references": "the parse-only renderer, built once",
    "_lexer": "a Pygments lexer by language name",
    "shared_parser": "the import's Markdown parser, built once",
    "_parsed_definition": "a drill file's text parsed (keyed by the text itself)",
    "entry_arg_names": "an entry point's parameter names, from the source text",
    "_reference_rules": "the advice rules a reference breaks, from its source text",
    "updates_in_place": "whether a reference's source updates in place, from the text",
    "visible_examples": "a drill's examples, keyed by its version and text",
    "title_html": "a drill title's Markdown as HTML, keyed by the title",
    "_load": "a corrections file, keyed by its path and modification time",
    "_process_identity": "this process's host, pid and start time",
    "worker_device": "the device this process grades on, decided once from the host",
    # One client (a connection pool) or semaphore per process: no data kept.
    "_client": "the Redis client (a connection pool)",
    "_redis_client": "the health check's Redis client (a connection pool)",
    "_waiters": "a semaphore bounding the threads that wait for a verdict",
    # The sandbox's own, inside a runner or the fork server: never this project's database.
    "seccomp_program": "the sandbox's seccomp filter, generated once in the fork server",
    "_numpy_dtypes": "torch's dtypes, looked up once",
    "_dtypes": "torch's dtypes by name, looked up once",
    "_MODULES": "modules a jailed child imported (the sandbox's guest side)",
    "_RANDOM_STATES": "the seeded ``random`` states of a jailed child (the sandbox's guest side)",
    # Process state set once by a function (``global``): the worker's own machinery, no data read.
    "_FILTER": "the sandbox's seccomp filter object, built once per process",
    "_heartbeat": "the grading process's heartbeat thread",
    "_pool": "the grading process's warm sandbox pool",
    "_pool_pid": "the process that built the warm pool (a fork builds its own)",
    "_source": "how this process gets its sandbox pool, registered once by the graders app (jobs.pools)",
    # Reference outputs, computed by running the drill's reference: the references service (issue 40 item 3).
    "DEFAULT_CACHE": "the references' outputs, from sandbox runs, not from the database",
}
# Files whose SQL is an Anki collection's (the export and import of .apkg files through sqlite3), not ours.
OTHER_DATABASES = {"cards/anki.py"}

UNDER_THE_ORM = re.compile(r"\.cursor\(|\.raw\(|\bRawSQL\b|\.extra\(|\bget_compiler\b|\bsql_with_params\b|\bPrepared\(")
RAW_SQL = re.compile(r"^\s*(SELECT|INSERT INTO|UPDATE \S+ SET|DELETE FROM|WITH \w+ AS)\b")
CACHE_DECORATORS = {"cache", "lru_cache"}
MAPPINGS = {"dict", "OrderedDict", "defaultdict", "WeakValueDictionary", "WeakKeyDictionary"}
WRITES = {"setdefault", "update", "pop", "popitem", "clear", "move_to_end", "__setitem__"}


def app_files() -> list[Path]:
    packages = [p for p in REPO.iterdir() if (p / "__init__.py").exists() and p.name not in NOT_APP_CODE]
    return sorted(
        path
        for package in packages
        if package.name != HOME
        for path in package.rglob("*.py")
        # makemessages' passing ``page.html.py`` files (tests/test_i18n.py) are no modules
        if "migrations" not in path.parts and "." not in path.stem
    )


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""


def _is_mapping(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Dict):
        return not node.keys  # ``{}``: filled later; a literal table is a constant
    return isinstance(node, ast.Call) and _decorator_name(node) in MAPPINGS and not node.args and not node.keywords


def _written_names(function: ast.AST) -> set[str]:
    """Module-level names a function writes into: ``NAME[key] = ...``, ``NAME.setdefault(...)`` and the like."""
    written = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            written.add(node.value.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in WRITES
            and isinstance(node.func.value, ast.Name)
        ):
            written.add(node.func.value.id)
    return written


def _set_globals(function: ast.AST) -> set[str]:
    """The module globals a function declares ``global`` and assigns."""
    declared = {name for node in ast.walk(function) if isinstance(node, ast.Global) for name in node.names}
    assigned = {
        target.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    return declared & assigned


def module_caches(source: str) -> list[str]:
    """The module-level caches in ``source``, by name."""
    tree = ast.parse(source)
    found = []
    mappings = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if any(_decorator_name(d) in CACHE_DECORATORS for d in node.decorator_list):
                found.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if _is_mapping(node.value):
                mappings.update(names)
            elif isinstance(node.value, ast.Call) and _decorator_name(node.value).endswith("Cache"):
                found += names
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    for function in functions:
        if not function.name.lstrip("_").startswith("register"):
            found += sorted(mappings & _written_names(function))
            found += sorted(_set_globals(function))
    return sorted(set(found))


def offences(path: Path) -> list[str]:
    relative = path.relative_to(REPO).as_posix()
    source = path.read_text(encoding="utf-8")
    caches = [name for name in module_caches(source) if name not in KEPT_ELSEWHERE]
    found = [f"{relative}: {name} is a module-level cache" for name in caches]
    if relative in OTHER_DATABASES:
        return found
    for number, line in enumerate(source.splitlines(), 1):
        code = line.split("#", 1)[0]
        for match in UNDER_THE_ORM.finditer(code):
            found.append(f"{relative}:{number}: {match.group(0)!r}")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and RAW_SQL.match(node.value):
            found.append(f"{relative}:{node.lineno}: SQL {node.value[:40]!r}")
    return found


def test_nothing_outside_the_fast_path_goes_under_the_orm_or_keeps_a_cache() -> None:
    assert [offence for path in app_files() for offence in offences(path)] == []


def test_every_exception_is_still_there() -> None:
    """An entry whose cache went away goes too, so the list stays the list of what is kept elsewhere."""
    kept = {name for path in app_files() for name in module_caches(path.read_text(encoding="utf-8"))}
    assert sorted(set(KEPT_ELSEWHERE) - kept) == []


@pytest.mark.parametrize(
    ("source", "caches"),
    [
        ("import functools\n@functools.lru_cache(maxsize=8)\ndef f(x): return x\n", ["f"]),
        ("from functools import cache\n@cache\ndef f(): return 1\n", ["f"]),
        ("_seen = {}\ndef f(k):\n    _seen[k] = 1\n", ["_seen"]),
        ("_seen: dict[str, int] = {}\ndef f(k):\n    _seen.setdefault(k, 1)\n", ["_seen"]),
        ("from collections import OrderedDict\n_rows = OrderedDict()\ndef f():\n    _rows.popitem()\n", ["_rows"]),
        ("KEPT = Cache()\n", ["KEPT"]),
        ("_kept = None\ndef f():\n    global _kept\n    _kept = 1\n", ["_kept"]),
        ("_PARTS = {}\ndef register_part(n):\n    _PARTS[n] = 1\n", []),  # a registry
        ("TABLE = {'a': 1}\ndef f(): return TABLE['a']\n", []),  # a constant
        ("def f():\n    seen = {}\n    seen[1] = 2\n", []),  # a local
    ],
)
def test_it_tells_a_cache_from_a_registry_or_a_constant(source: str, caches: list[str]) -> None:
    assert module_caches(source) == caches


@pytest.mark.parametrize(
    "line",
    [
        "with connection.cursor() as c:",
        "Model.objects.raw('...')",
        "q.query.get_compiler(using=alias)",
        "X = Prepared(lambda pk: q)",
        "qs.extra(select={})",
    ],
)
def test_it_sees_each_way_under_the_orm(line: str) -> None:
    assert UNDER_THE_ORM.search(line)


def test_it_sees_a_raw_sql_string_but_not_prose() -> None:
    assert RAW_SQL.match("SELECT 1")
    assert RAW_SQL.match("UPDATE cards_card SET x = 1")
    assert not RAW_SQL.match("Select a card to review")
    assert not RAW_SQL.match("UPDATE = the drill's fix")
