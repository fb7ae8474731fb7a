""" "Check" to its answer for a course's drill on `make run`'s own stack (issue 35: 8 cases, 3 known-wrong).

Why: the editor waits on this click, and a check is many sandbox runs (the reference graded for two seeds, each
known-wrong solution graded once) on the worker that also grades learners. This drives the exact processes
`make run` starts (scripts/run.sh through bench.runstack) through the web pages an editor uses:

1. start scripts/run.sh in a temporary var folder on a free port (SQLite and the embedded broker);
2. sign up an editor, make a team, paste the drill file (8 cases: 2 examples, hidden 4 random + 2 edge; 3 known-
   wrong solutions) as a draft of the team's course;
3. one warm-up check (the worker's first sandbox child may still be importing torch), then --checks times:
   "Save and check" with a new title (a new text, so a new check), then the report fragment polled every
   --poll seconds until it is final: the time from the click's POST to the report is the figure;
4. the checks' rows read back (queued, claimed, finished; the sandbox time each report gives), and the stack
   stopped as a person stops `make run`.

Prints markdown tables; exits 1 when a check did not pass or never finished.

Usage: .venv/bin/python bench/drill_check.py [--checks 20] [--poll 0.02]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.runstack import REPO, RunStack  # noqa: E402

DRILL = """\
slug = "double"
title = "Double it {n}"
entry_point = "solution"
device = "cpu"
difficulty = "easy"
prompt_en = "Write `solution(x)`: return `2 * x` as a new tensor, `x` itself unchanged."
starter = "def solution(x):\\n    ...\\n"
reference = "import torch\\n\\n\\ndef solution(x):\\n    return x * 2\\n"

[source]
note = "basics.md"
heading = "Tensors"

[[examples]]
name = "small"
args = ["torch.tensor([1.0, 2.0, 3.0])"]

[[examples]]
name = "negative"
args = ["torch.tensor([-1.5, 0.0])"]

[[hidden]]
name = "random"
repeat = 4
args = ["torch.randn(rng.randint(1, 50), generator=g)"]

[[hidden]]
name = "empty"
args = ["torch.zeros(0, rng.randint(1, 5))"]

[[hidden]]
name = "matrix"
args = ["torch.randn(rng.randint(2, 9), rng.randint(2, 9), generator=g)"]

[[wrong]]
why = "adds two instead of doubling"
expect = "wrong_answer"
code = "def solution(x):\\n    return x + 2\\n"

[[wrong]]
why = "a typo"
expect = "runtime_error"
says = "NameError"
code = "def solution(x):\\n    return y * 2\\n"

[[wrong]]
why = "doubles x in place"
expect = "wrong_answer"
says = "changed its argument"
code = "def solution(x):\\n    return x.mul_(2)\\n"
"""
CASES = 8


def drill_text(n: int) -> str:
    return DRILL.replace("{n}", str(n))


class Editor:
    """One signed-in browser session (the pages' forms, with their CSRF token)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.web = requests.Session()

    def post(self, path: str, data: dict[str, str]) -> requests.Response:
        self.web.get(self.base + path if path.endswith("/") else self.base + "/", timeout=30)
        headers = {"X-CSRFToken": self.web.cookies.get("csrftoken", ""), "Referer": self.base + path}
        return self.web.post(self.base + path, data=data, headers=headers, allow_redirects=False, timeout=30)

    def sign_up(self, username: str, password: str) -> None:
        self.web.get(f"{self.base}/accounts/signup/", timeout=30)
        response = self.post("/accounts/signup/", {"username": username, "password1": password, "password2": password})
        assert response.status_code == 302, f"signup failed: {response.status_code}"

    def team(self, name: str) -> str:
        response = self.post("/teams/", {"name": name, "time_zone": "UTC"})
        assert response.status_code == 302, f"no team: {response.status_code}"
        return response.headers["Location"].rstrip("/").rsplit("/", 1)[-1]

    def draft(self, team: str, text: str) -> str:
        response = self.post(f"/courses/{team}/drills/new/toml/", {"text": text})
        assert response.status_code == 302, f"no draft: {response.status_code}"
        return response.headers["Location"].rstrip("/").rsplit("/", 1)[-1]

    def check(self, team: str, draft: str, text: str, poll: float, timeout: float = 120) -> tuple[float, str, str]:
        """Save and check, then the report fragment until final: (seconds, status, fragment)."""
        started = time.perf_counter()
        response = self.post(f"/courses/{team}/drills/{draft}/toml/", {"text": text, "check": "1"})
        assert response.status_code == 302, f"check not asked: {response.status_code}"
        status_url = f"{self.base}/courses/{team}/drills/{draft}/check/status/"
        while time.perf_counter() - started < timeout:
            page = self.web.get(status_url, headers={"HX-Request": "true"}, timeout=30).text
            found = re.search(r'data-check-status="([a-z_]+)"', page)
            if found and found.group(1) not in ("queued", "running"):
                return time.perf_counter() - started, found.group(1), page
            time.sleep(poll)
        raise AssertionError(f"the check was not final after {timeout} s")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def rows_of(stack: RunStack, draft: str) -> list[dict[str, float]]:
    """The draft's checks as stored: queue wait, run time, sandbox time (manage.py shell, the stack's database)."""
    script = (
        "import json\nfrom graders.models import DrillCheck\n"
        f"rows = DrillCheck.objects.filter(draft__uuid='{draft}').order_by('pk')\n"
        "print(json.dumps([{'wait': (c.claimed_at - c.queued_at).total_seconds(), "
        "'run': (c.finished_at - c.claimed_at).total_seconds(), 'sandbox': c.sandbox_ms / 1000} for c in rows]))"
    )
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "manage.py", "shell", "-c", script],
        cwd=REPO, env=stack.environment(), capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def table(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"| {name} | {len(ms)} | {statistics.median(ms):.0f} | {percentile(ms, 0.95):.0f} | {statistics.mean(ms):.0f} "
        f"| {min(ms):.0f} | {max(ms):.0f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=20, help="Checks measured after the warm-up one.")
    parser.add_argument("--poll", type=float, default=0.02, help="Seconds between reads of the report fragment.")
    args = parser.parse_args(argv)
    stack = RunStack(env_overrides={"COURSE_CHECKS_PER_HOUR": "1000", "COURSE_CHECK_SECONDS_PER_HOUR": "100000"})
    failures = 0
    try:
        stack.start()
        editor = Editor(stack.url)
        editor.sign_up(f"editor-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex)
        team = editor.team("Bench authors")
        draft = editor.draft(team, drill_text(0))
        editor.check(team, draft, drill_text(0), args.poll)  # warm-up
        seconds = []
        for n in range(1, args.checks + 1):
            took, status, page = editor.check(team, draft, drill_text(n), args.poll)
            passed = 'data-check-result="passed"' in page and page.count('data-item="wrong"') == 3
            if status != "done" or not passed:
                failures += 1
                print(f"check {n} did not pass:", re.findall(r'data-item="(\w+)" data-passed="false"', page))
            seconds.append(took)
        rows = rows_of(stack, draft)[1:]  # less the warm-up
    finally:
        stop_seconds, left = stack.stop() if stack.process is not None else (0.0, [])
        stack.destroy()
    print(
        f"\nCheck of a drill with {CASES} cases and 3 known-wrong solutions, `make run`'s stack, {args.checks} checks\n"
    )
    print("| what | n | p50 ms | p95 ms | mean ms | min ms | max ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(table(f'"Save and check" POST to the final report (polled every {args.poll:g} s)', seconds))
    print(table("queued to claimed (the worker's queue)", [r["wait"] for r in rows]))
    print(table("claimed to finished (the check's run)", [r["run"] for r in rows]))
    print(table("sandbox time in the report", [r["sandbox"] for r in rows]))
    print(f"\nchecks that did not pass: {failures}; stack stopped in {stop_seconds:.1f} s, processes left: {len(left)}")
    return 1 if failures or left else 0


if __name__ == "__main__":
    sys.exit(main())
