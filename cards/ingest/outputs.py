"""Find what a code block printed, so it can become a "what does this print?" card.

The notes show output three ways: IPython transcripts (``In [3]:`` / ``Out[3]:``), ``>>>`` lines
(used both the standard way, as the prompt, and the notes' own way, marking the output), and a
separate fence right after the code (optionally after an "输出：" line). The parsing here is
deliberately conservative: a block that does not clearly show output makes no card.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OUT = re.compile(r"^Out\[\d+\]:\s?(.*)$")
_IN = re.compile(r"^In \[\d+\]:\s?(.*)$")
_PROMPT = re.compile(r"^>>>\s?(.*)$")
_CONTINUATION = re.compile(r"^(\.\.\.|\s+\.\.\.:)")
# What a printed value starts with (as opposed to code typed at a ``>>>`` prompt).
_OUTPUTISH = re.compile(
    r"^(tensor\(|Traceback\b|torch\.Size|array\(|Parameter|[-+]?\d|\[|\{|\(|True\b|False\b|None\b|['\"<])"
)
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Warning|Interrupt)\b")
_RANDOM_CALL = re.compile(r"\b(randn|rand|randint|randperm|normal|random|uniform)\b")
_OUTPUT_LABEL = re.compile(r"^\s*(输出|输出结果|结果|打印结果|运行结果|output|out)\s*[:：]?\s*$", re.IGNORECASE)
_OUTPUT_INFOS = {"", "text", "output", "console", "plaintext", "none", "txt"}
_MAX_OUTPUT_LINES = 200


@dataclass(frozen=True)
class Exchange:
    """One shown output: the transcript up to the line that printed it, and what it printed."""

    code: str
    output: str


def is_output_label(text: str) -> bool:
    return bool(_OUTPUT_LABEL.match(text))


def is_output_fence(info: str) -> bool:
    """A fence without a language (or an explicit text one) right after code is printed output."""
    return info.strip().lower() in _OUTPUT_INFOS


def split_session(code: str) -> list[Exchange]:
    """Every output shown inside one code block, each with the transcript that precedes it."""
    lines = code.rstrip("\n").split("\n")
    first = next((line for line in lines if line.strip()), "")
    repl_mode = bool(_PROMPT.match(first))
    exchanges: list[Exchange] = []
    index = 0
    after_prompt = False
    while index < len(lines):
        line = lines[index]
        out = _OUT.match(line)
        prompt = _PROMPT.match(line)
        if out:
            end, output = _collect_value(lines, index, out.group(1))
        elif prompt and not line.startswith(">>> ") and _OUTPUTISH.match(prompt.group(1)):
            # The notes' own convention: ``>>>tensor(...)`` (no space) marks what was printed.
            end, output = _collect_value(lines, index, prompt.group(1))
        elif (
            repl_mode
            and after_prompt
            and not prompt
            and line.strip()
            and not _IN.match(line)
            and not _CONTINUATION.match(line)
        ):
            end = index
            while end < len(lines) and lines[end].strip() and not _PROMPT.match(lines[end]):
                end += 1
            output = "\n".join(lines[index:end])
        else:
            after_prompt = bool(prompt) or (after_prompt and bool(_CONTINUATION.match(line)))
            index += 1
            continue
        transcript = "\n".join(lines[:index]).rstrip()
        if output.strip() and transcript.strip() and not _echoes_random_value(lines[:index]):
            exchanges.append(Exchange(code=transcript, output=output.rstrip()))
        after_prompt = False
        index = max(end, index + 1)
    return exchanges


def _collect_value(lines: list[str], start: int, first: str) -> tuple[int, str]:
    """Lines of one printed value: a traceback up to its error line, else until brackets balance."""
    collected = [first] if first.strip() else []
    index = start + 1
    if not collected and index < len(lines):
        collected.append(lines[index])
        index += 1
    if collected and collected[0].startswith("Traceback"):
        while index < len(lines) and len(collected) < _MAX_OUTPUT_LINES:
            collected.append(lines[index])
            index += 1
            if _ERROR_LINE.match(collected[-1]):
                break
        return index, "\n".join(collected)
    depth = _bracket_depth("\n".join(collected))
    while depth > 0 and index < len(lines) and len(collected) < _MAX_OUTPUT_LINES:
        collected.append(lines[index])
        depth += _bracket_depth(lines[index])
        index += 1
    return index, "\n".join(collected)


def _bracket_depth(text: str) -> int:
    return sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")


def _input_text(line: str) -> str:
    for pattern in (_IN, _PROMPT):
        match = pattern.match(line)
        if match:
            return match.group(1).strip()
    return line.strip()


def _echoes_random_value(before: list[str]) -> bool:
    """``a = torch.randn(3)`` then ``a``: the printed numbers are random, nobody can recall them."""
    inputs = [_input_text(line) for line in before if line.strip() and not line.startswith((" ", "\t"))]
    inputs = [line for line in inputs if not _OUT.match(line)]
    if len(inputs) < 2 or not re.fullmatch(r"\w+", inputs[-1]):
        return False
    name = inputs[-1]
    assignment = re.match(rf"^{re.escape(name)}\s*=(.*)$", inputs[-2])
    return bool(assignment and _RANDOM_CALL.search(assignment.group(1)))
