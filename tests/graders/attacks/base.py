"""What an attack is, and the helpers that write one.

Every attack targets the drill ``solution(x) -> x * 2`` and returns the correct answer only if its hostile
step worked, so "ok with every case correct" means the attack got through.  Placeholders replaced before a
run: CANARY_FILE (a file holding CANARY_TEXT), CANARY_ENV (an environment variable of the parent holding
CANARY_TEXT), PROJECT_ROOT, PWNED (a name that must never appear on the host) and PWNKEY (an integer key
derived from PWNED, for System V objects).

A ``raw`` attack runs with layers 1 and 2 off (``SandboxPool(unguarded=True)``: plain bytecode and the
real builtins from its first line); on a guarded pool it is compiled without layer 1 and escapes layer 2
by plain introspection before it starts (``RAW_PRELUDE``). Either way it shows what layer 3 and the
parent (layer 4) stop on their own, through the real pool, fork server and runner. HOST_NAME is replaced
by the host's name.  A ``follow_up`` is a second submission run right after the first, on
another runner: the pair gets through if the follow-up finds what the first one left behind. A ``beside``
is a second submission run at the same time as the first, on a runner of another pool (another fork server,
as two grading processes on one host have): the pair gets through if the first learns what the one beside it
sends.
"""

from __future__ import annotations

from dataclasses import dataclass

LAYERS = ("1-static", "2-runtime", "3-process", "4-result")


@dataclass(frozen=True)
class Attack:
    name: str
    category: str
    code: str
    cpu_seconds: float = 2.0
    wall_seconds: float = 5.0
    memory_mb: int = 1024
    grad: bool = False
    raw: bool = False  # compiled as plain Python, with the real builtins (layers 1 and 2 assumed broken)
    follow_up: str = ""  # a second submission; the pair gets through if it returns the correct answer
    beside: str = ""  # a submission run at the same time in another pool; the first's answer judges the pair


def fn(body: str, imports: str = "import torch") -> str:
    """Wrap a function body into a submission with the drill's entry point."""
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"{imports}\n\ndef solution(x):\n{indented}\n    return x * 2\n"


def attempt(body: str, prelude: str = "") -> str:
    """A submission whose body returns ``x * 2`` once its hostile step worked; a step that raises ends the
    case with the error (which names the layer that refused it), one that fails quietly returns None."""
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"{prelude}\n\ndef solution(x):\n{indented}\n"


# The classic layer 2 escape, written for plain (untransformed) bytecode: any class whose __init__ is a
# Python function leads to its module's globals and so to the real builtins.
RAW_PRELUDE = """
def _escape():
    for cls in ().__class__.__base__.__subclasses__():
        try:
            found = cls.__init__.__globals__
        except AttributeError:
            continue
        if "__builtins__" in found:
            real = found["__builtins__"]
            return real if isinstance(real, dict) else real.__dict__
    raise RuntimeError("no escape")

B = _escape()
imp = B["__import__"]
os = imp("os")
sys = imp("sys")
sys._getframe().f_globals["__builtins__"] = B  # functions defined from here on see the real builtins
"""


def raw(body: str, prelude: str = "") -> str:
    """A plain-Python submission that has the real builtins; the body returns x * 2 once it got through."""
    return attempt(body, RAW_PRELUDE + prelude)


def blocking_layer(status: str, message: str, errors: list[str], attack: Attack | None = None) -> str:
    """Which layer stopped an attack, read from its RunResult (for the report only)."""
    errors = [e for e in errors if e]
    text = " ".join([message, *errors])
    if attack is not None and attack.category == "cross_submission":
        return "3-process"  # each submission has a process of its own
    if attack is not None and attack.category in ("parent_robustness", "parent_decoding"):
        return "4-result"  # the parent's decoding of what a runner sent
    if attack is not None and attack.raw:
        return "3-process"
    if status == "rejected":
        return "1-static"
    if status in ("time_limit", "memory_limit", "output_limit"):
        return "3-process"
    if status == "ok" and not errors:
        return "4-result"
    if any(k in text for k in ("sandbox", "is not defined", "has no attribute", "may be imported", "read-only")):
        return "2-runtime"
    if "cannot be returned" in text or "nested too deeply" in text:
        return "4-result"
    return "2-runtime" if status in ("ok", "runtime_error") else "3-process"
