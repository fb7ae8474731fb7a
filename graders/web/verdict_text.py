"""Verdict text in the learner's language, translated where it is shown (docs/i18n.md).

The grading core (``graders.drills``, ``graders.sandbox``) is pure and writes its verdicts in English: a
message, each test's message, the violations, the advice, all stored as they were said. This module
turns them into the interface language at display time, so the core stays free of Django and every
stored verdict, old ones included, reads in Chinese too.

Each shape the core writes is listed once below (``quizsite.stored_text`` says how a shape matches and
is translated): a path phrase, a loop's name or an inner message in a slot is translated too; a line
that matches no shape stays as it was, English and exact (a torch error, say).
tests/graders/test_verdict_text.py runs the core's own messages through it, so a shape changed there
without its entry here fails.
"""

from __future__ import annotations

from django.utils.translation import gettext, gettext_noop

from quizsite.stored_text import Catalogue, Shape, shapes

# Slots that sit beside another slot, or that must not swallow a neighbour, get their own pattern.
_NAME = r"(?:`[^`]*`|argument \d+)"
SLOT_PATTERNS = {
    "names": rf"{_NAME}(?:(?:, | and ){_NAME})*",
    "first": rf"{_NAME}(?:, {_NAME})*",
    "last": _NAME,
    "where": r"(?: \(line \d+(?:: .*)?\))?",
    "n": r"\d+",
    "line": r"\d+",
    "test": r"[^:\n]{1,80}",
}


def _typed(source: str) -> Shape:
    """A sentence that names the result's type with an English article ("an int"): the article goes."""
    return Shape(source, articles=("want", "got"))


# Most specific first: the first shape that matches a whole line wins.
SHAPES = shapes(
    # graders.drills.grading: the verdict's own line and the hidden tests.
    gettext_noop("all %(n)s tests passed"),
    (gettext_noop("the hidden tests ended in %(phase)s"), ("phase",)),
    gettext_noop("failed (a hidden case: its inputs, output and any error or message stay hidden)"),
    gettext_noop("the runner returned %(got)s results for %(n)s cases"),
    gettext_noop("raised an error"),
    gettext_noop("the grader could not observe what your function did (no behaviour record came back)"),
    # graders.sandbox: limits and crashes.
    gettext_noop("time limit: over %(seconds)s s of wall time"),
    gettext_noop("time limit: over %(seconds)s s of CPU"),
    gettext_noop("output limit: more than %(n)s bytes printed"),
    gettext_noop("memory limit: %(detail)s"),
    gettext_noop("the process died (%(signal)s) before returning"),
    gettext_noop("Traceback (your code, most recent call last):"),
    gettext_noop("  line %(line)s, in %(function)s: %(code)s"),
    gettext_noop("  line %(line)s, in %(function)s"),
    # graders.drills.compare: the first mismatch.
    (
        gettext_noop(
            "wrong value at %(place)s: expected %(want)s, got %(got)s; max abs error %(abs)s, max rel error "
            "%(rel)s (allowed: |actual - expected| <= %(atol)s + %(rtol)s * |expected|)"
        ),
        ("place",),
    ),
    (
        gettext_noop("wrong value at %(place)s: expected %(want)s, got %(got)s (%(count)s of %(total)s differ)"),
        ("place",),
    ),
    (gettext_noop("wrong value at %(place)s: expected %(want)s, got %(got)s"), ("place",)),
    gettext_noop("expected shape %(want)s at %(path)s, got %(got)s"),
    gettext_noop("expected shape %(want)s, got %(got)s"),
    gettext_noop("expected dtype %(want)s at %(path)s, got %(got)s"),
    gettext_noop("expected dtype %(want)s, got %(got)s"),
    gettext_noop("expected a tensor on %(want)s at %(path)s, got one on %(got)s"),
    gettext_noop("expected a tensor on %(want)s, got one on %(got)s"),
    gettext_noop("expected a %(layout)s tensor at %(path)s, got %(got)s"),
    gettext_noop("expected a %(layout)s tensor, got %(got)s"),
    gettext_noop("expected a %(kind)s of length %(n)s at %(path)s, got length %(got)s"),
    gettext_noop("expected a %(kind)s of length %(n)s, got length %(got)s"),
    gettext_noop("dict keys differ at %(path)s: missing %(missing)s, unexpected %(extra)s"),
    gettext_noop("dict keys differ: missing %(missing)s, unexpected %(extra)s"),
    gettext_noop("expected a Python %(want)s at %(path)s, got %(got)s"),
    gettext_noop("expected a Python %(want)s, got %(got)s"),
    gettext_noop("expected a %(want)s at %(path)s, got %(got)s"),
    gettext_noop("expected a %(want)s, got %(got)s"),
    gettext_noop("the result"),
    # graders.drills.contract: a broken promise, in a teacher's words.
    (
        gettext_noop(
            "%(names)s should be updated in place, but the caller's tensor did not change: `w = w - ...` makes a "
            "new tensor; write `w -= ...` or `w.sub_(...)` (inside `torch.no_grad()`)"
        ),
        ("names",),
    ),
    (
        gettext_noop(
            "%(names)s was given new memory (`.data = ...` or `.set_()`) instead of being updated in place: use an "
            "in-place operation such as `.sub_(...)` or `.copy_(...)`"
        ),
        ("names",),
    ),
    (
        gettext_noop(
            "your function changed its argument %(names)s%(where)s; the caller's value must stay as it was: work "
            "on a copy (`.clone()`) or use an out-of-place operation"
        ),
        ("names", "where"),
    ),
    (
        gettext_noop(
            "your function changed its argument %(names)s%(where)s; the caller's value must stay as it was: use an "
            "out-of-place operation (this drill does not allow `.clone()`)"
        ),
        ("names", "where"),
    ),
    (
        gettext_noop(
            "your function left a `.grad` on its argument %(names)s%(where)s: the caller's tensor is not yours to "
            "change, and a second call would add to that `.grad`. Differentiate a copy (`x.detach().requires_grad_()`) "
            "or use `torch.autograd.grad`"
        ),
        ("names", "where"),
    ),
    (
        gettext_noop(
            "your function changed `requires_grad` on its argument %(names)s%(where)s: do that on a copy "
            "(`.detach().clone().requires_grad_()`), not on the caller's tensor"
        ),
        ("names", "where"),
    ),
    (
        gettext_noop(
            "the result shares memory with the argument %(names)s: the statement asks for a new tensor, so "
            "changing one would change the other. Return a copy (`.clone()`) or build a new tensor"
        ),
        ("names",),
    ),
    gettext_noop(
        "the result carries no autograd graph, so gradients cannot flow back through it: was it detached, or "
        "computed under `torch.no_grad()`?"
    ),
    gettext_noop(
        "the result still carries an autograd graph (grad_fn=%(grad_fn)s): do the update inside `torch.no_grad()`, "
        "or return `.detach()`ed tensors"
    ),
    gettext_noop(
        "the result still carries an autograd graph (grad_fn=%(grad_fn)s): compute it under `torch.no_grad()`, or "
        "return `.detach()`ed tensors"
    ),
    (
        gettext_noop(
            "the result shares memory with the argument %(names)s: the statement asks for a new tensor, so "
            "changing one would change the other. Build a new tensor with an operation that makes one (this drill "
            "does not allow `.clone()`)"
        ),
        ("names",),
    ),
    gettext_noop("the result still requires grad: return a `.detach()`ed tensor"),
    gettext_noop(
        "your function left autograd switched off (`torch.set_grad_enabled(False)` with nothing to switch it back "
        "on): the caller's code after it records no graph and gets no gradients. Use `with torch.no_grad():` "
        "around the part that needs it: autograd comes back on when the block ends"
    ),
    gettext_noop(
        "your function left torch's global setting `%(setting)s` changed: the caller's code after it runs under "
        "your setting. Change it inside a `with` block, or set it back before returning"
    ),
    gettext_noop("the result should be on %(want)s, but it is on %(got)s: move it with `.to(...)`"),
    gettext_noop(
        "your function left %(kept)s autograd operations alive after it returned, held by something other than its "
        "result (a list at module level or an argument it appends to): each step's graph lives as long as that "
        "list. Keep `loss.item()` (a Python float) or `loss.detach()` instead"
    ),
    gettext_noop(
        "your function kept the autograd graphs of earlier steps alive: at its peak its graphs held %(peak)s "
        "operations, where each step needs about %(reference)s. Record a loss with `loss.item()` (a Python float) "
        "or `.detach()` so each step's graph can be freed"
    ),
    gettext_noop(
        "your function kept too much alive at once: its tensors peaked at %(peak)s, where the reference needs "
        "%(reference)s. A running total that is still a tensor, or outputs kept in a list, keeps every batch's "
        "graph and the activations it saved (and one batch of everything holds them all at once): compute under "
        "`torch.no_grad()`, a batch at a time, and keep plain numbers (`.item()`) or `.detach()`ed tensors"
    ),
    (
        gettext_noop(
            "your function ran %(steps)s lines of Python in one call%(where)s, where the reference runs "
            "%(reference)s: a Python loop over a tensor's elements (or over its `.tolist()`) is the usual cause. One "
            "tensor operation (indexing with the whole index tensor, broadcasting) does the same work in C"
        ),
        ("where",),
    ),
    gettext_noop(
        "your function took %(spent)s ms of CPU time, where the reference takes %(reference)s ms: a Python loop "
        "over a tensor's elements is the usual cause. One tensor operation (indexing with the whole index tensor, "
        "broadcasting) does the same work in C"
    ),
    gettext_noop(
        "your function took %(spent)s ms of CPU time over all the tests, where the reference's calls take "
        "%(reference)s ms: a Python loop over a tensor's elements is the usual cause. One tensor operation "
        "(indexing with the whole index tensor, broadcasting) does the same work in C"
    ),
    gettext_noop("the grader could not measure your function's CPU time; submit it again"),
    gettext_noop(
        "called a second time with the same inputs, your function %(what)s: it keeps state between calls (a "
        "module-level variable, a mutable default argument, or a `.grad` that keeps growing)"
    ),
    gettext_noop(
        "called on new values of the same shape as `%(test)s` (which passed), your function got them wrong: it keeps "
        "state from an earlier call (a mask, a cache or a network made on the first call of a shape and reused). "
        "Compute everything from this call's inputs"
    ),
    gettext_noop("fails too (new values of a hidden case's shape); the failing example above shows what to fix first"),
    gettext_noop(
        "called twice, your function returned the same tensor both times (kept from the first call, a cache): a "
        "caller that changes one answer changes the other. Compute a new tensor on every call"
    ),
    (
        gettext_noop(
            "called a second time with fresh copies of the same inputs, your function changed its argument "
            "%(names)s, which the first call left alone: it keeps state between calls (a module-level variable, "
            "a mutable default argument, a flag set by the first call)"
        ),
        ("names",),
    ),
    gettext_noop(
        "called twice with the same inputs, your function gave two different answers: it keeps state between "
        "calls (a module-level variable, a mutable default argument, or a `.grad` that keeps growing)"
    ),
    _typed(
        gettext_noop(
            "the result should be %(want)s, but your function returned %(got)s: convert with "
            "`torch.from_numpy(...)` or compute with torch from the start"
        )
    ),
    _typed(
        gettext_noop(
            "the result should be %(want)s, but your function returned %(got)s: convert it with `%(type)s(...)`"
        )
    ),
    _typed(
        gettext_noop(
            "the result should be %(want)s, but your function returned %(got)s: take the number out with `.item()`"
        )
    ),
    _typed(
        gettext_noop(
            "the result should be %(want)s, but your function returned %(got)s: wrap it with `torch.tensor(...)`"
        )
    ),
    _typed(gettext_noop("the result should be %(want)s, but your function returned %(got)s")),
    gettext_noop(" (line %(line)s: %(code)s, %(n)s times)"),
    gettext_noop(" (line %(line)s: %(code)s)"),
    gettext_noop(" (line %(line)s)"),
    (gettext_noop("%(first)s and %(last)s"), ("first", "last")),
    gettext_noop("argument %(n)s"),
    # graders.drills.constraints: why the code was refused before running.
    gettext_noop("the code is %(size)s bytes; the limit is %(limit)s"),
    gettext_noop("line %(line)s: syntax error: %(detail)s"),
    (gettext_noop("line %(line)s: %(what)s; this drill forbids loops"), ("what",)),
    gettext_noop("line %(line)s: the drill forbids %(name)s (found %(found)s)"),
    gettext_noop("line %(line)s: the drill forbids %(name)s"),
    gettext_noop("line %(line)s: a decorator; this drill allows only calls of %(allowed)s"),
    gettext_noop("line %(line)s: calls %(name)s; this drill allows only %(allowed)s"),
    (gettext_noop("line %(line)s: %(what)s; write each function as one return expression"), ("what",)),
    (gettext_noop("%(what)s outside a function"), ("what",)),
    gettext_noop("%(function)s() has %(n)s statements, not a single return"),
    gettext_noop("a for loop"),
    gettext_noop("a while loop"),
    gettext_noop("a list comprehension"),
    gettext_noop("a set comprehension"),
    gettext_noop("a dict comprehension"),
    gettext_noop("a generator expression"),
    gettext_noop("an assignment"),
    gettext_noop("an expression statement"),
    gettext_noop("a class"),
    gettext_noop("an if statement"),
    # graders.drills.advice: habits worth changing on an accepted solution.
    gettext_noop(
        "line %(line)s: a Python loop over the elements of `%(name)s` runs one small torch call per element; a "
        "vectorised form (broadcasting, indexing with a tensor, `torch.where`) does it in one call"
    ),
    gettext_noop(
        "line %(line)s: `.item()` inside a loop makes the CPU wait for the device at every step (one GPU sync "
        "each); keep the values as tensors in the loop and convert once at the end"
    ),
    gettext_noop(
        "line %(line)s: `torch.tensor(%(name)s)` copies a tensor and warns; use `%(same)s.clone().detach()` (or "
        "`torch.as_tensor(%(again)s)` when no copy is needed)"
    ),
    # graders.drills.teacher: a failed verdict's common mistake, named with its fix.
    gettext_noop(
        "you updated a tensor that requires grad in place (like `w -= lr * w.grad`) while autograd was recording, "
        "and autograd refuses to change a leaf it tracks: wrap the update in `with torch.no_grad():`"
    ),
    gettext_noop(
        "you changed a tensor that requires grad in place (like `x += 1` or `x.clamp_(...)`) while autograd was "
        "recording, and autograd refuses to change a leaf it tracks: use the out-of-place form (`x = x + 1`, "
        "`x.clamp(...)`), which makes a new tensor"
    ),
    gettext_noop(
        "your result has nan or inf where the expected one is finite: `exp` of a large value overflows (or a 0/0). "
        "Subtract the maximum along the dimension before `exp`: softmax is unchanged by that shift, and `exp` "
        "never sees a large number"
    ),
    gettext_noop(
        "your result has nan or inf where the expected one is finite: `exp` of a very negative value underflows to "
        "0, and the `log` of that 0 (or a 0/0) is not finite. Stay in log space: subtract the maximum and take the "
        "log of the sum in one step (log-sum-exp), so nothing you divide by or take the log of is 0"
    ),
    gettext_noop(
        "your result has nan or inf where the expected one is finite: a value overflowed to inf or underflowed to 0 "
        "before a division or a `log`. Keep every step in range: subtract the maximum before `exp`, and take the "
        "log of a sum in one step (log-sum-exp)"
    ),
    gettext_noop(
        "the time ran out before every case had run: the cases after it were not run, not failed. A Python loop "
        "over a tensor's elements (one tensor operation does the same work) or a loop that never ends is the "
        "usual cause"
    ),
    # The statuses a hidden phase or a failed run reports as a test's message.
    gettext_noop("time limit"),
    gettext_noop("memory limit"),
    gettext_noop("output limit"),
    gettext_noop("runtime error"),
    gettext_noop("internal error"),
    gettext_noop("runtime_error"),
    gettext_noop("time_limit"),
    gettext_noop("memory_limit"),
    gettext_noop("output_limit"),
    gettext_noop("internal_error"),
    gettext_noop("rejected"),
    gettext_noop("not run"),
    # A failing test's line in the verdict: its name, then its own message (last: it matches widely).
    (gettext_noop("%(test)s: %(message)s"), ("message",)),
)

# The first mismatch's kind, as the verdict's heading names it.
MISMATCH_TITLES = {
    "value": gettext_noop("Wrong value"),
    "shape": gettext_noop("Wrong shape"),
    "dtype": gettext_noop("Wrong dtype"),
    "type": gettext_noop("Wrong type"),
    "length": gettext_noop("Wrong length"),
    "keys": gettext_noop("Wrong keys"),
    "layout": gettext_noop("Wrong layout"),
    "device": gettext_noop("Wrong device"),
}

CATALOGUE = Catalogue(SHAPES, SLOT_PATTERNS)


def translate_line(line: str) -> str:
    """One line of a verdict in the active language, or the line itself when no shape matches it whole."""
    return CATALOGUE.translate_line(line)


def translate(text: str) -> str:
    """A whole verdict text (a message, a test's message, a violation, advice), line by line."""
    return CATALOGUE.translate(text)


def mismatch_title(kind: str) -> str:
    source = MISMATCH_TITLES.get(kind)
    return gettext(source) if source else gettext(gettext_noop("Wrong %(kind)s")) % {"kind": kind}
