"""What a learner waits for, in a real browser on `make run`'s stack: click to verdict, and rating to next card.

Why in a browser: the figure a learner meets is the click to the rendered page, which includes htmx, the
page's own polling, the network and the paint; none of that shows in the grading benchmarks.

Two stacks run side by side (scripts/run.sh through bench.runstack, SQLite and the embedded broker each):
"wait" as shipped (the submit request waits for its verdict, GRADER_SUBMIT_WAIT_MS) and "poll" with the
wait off (GRADER_SUBMIT_WAIT_MS=0: the verdict comes by the page's polling, as before issue 37). Each
round measures ``--per-round`` clicks on each stack, in alternating order, so both meet the same machine:

1. verdict: on a drill page, set the editor's code (right and wrong in turn) and click Submit; from the
   click to the frame after the verdict of the new submission is in the page (performance.now() in the
   page, so Playwright's own round trips are not counted);
2. next card: on /review/, click Good; from the click to the frame after the next card is in the page.
   The learner's drill and output cards are suspended first, so the head is always a self-rated card.

Usage: .venv/bin/python bench/browser_latency.py [--clicks 100] [--per-round 10] [--drill reverse-1d]
Prints a markdown table (p50, p95, max per stack and action).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import requests
from playwright.sync_api import Error as PlaywrightError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.runstack import REPO, RunStack  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
FINAL = ["accepted", "wrong_answer", "runtime_error", "time_limit", "memory_limit", "output_limit", "rejected"]
FINAL_JS = json.dumps([*FINAL, "internal_error"])

# Resolves with the milliseconds from the click to the frame after the new submission's final verdict.
VERDICT_JS = f"""code => new Promise(resolve => {{
  const final = {FINAL_JS};
  const before = document.querySelector('#verdict')?.dataset.submission;
  window.quizDrillEditor.setValue(code);
  const done = () => {{
    const v = document.querySelector('#verdict');
    return v && v.dataset.submission && v.dataset.submission !== before && final.includes(v.dataset.status);
  }};
  const t0 = performance.now();
  const seen = new MutationObserver(() => {{
    if (done()) {{ seen.disconnect(); requestAnimationFrame(() => resolve(performance.now() - t0)); }}
  }});
  seen.observe(document.body, {{subtree: true, childList: true, attributes: true}});
  document.querySelector('button[name=kind][value=submit]').click();
}})"""

# Resolves with the milliseconds from the click on Good to the frame after the next card is in the page.
RATING_JS = """() => new Promise(resolve => {
  const before = document.querySelector('#review-panel [data-card]')?.dataset.card;
  let t0 = performance.now();
  const seen = new MutationObserver(() => {
    const card = document.querySelector('#review-panel [data-card]');
    if (card && card.dataset.card !== before) {
      seen.disconnect(); requestAnimationFrame(() => resolve(performance.now() - t0));
    }
  });
  seen.observe(document.body, {subtree: true, childList: true, attributes: true});
  const form = document.querySelector('#review-panel [data-rating-form]');
  window.htmx.process(form);  // as the page's own keys do: the swap may not be processed yet
  form.querySelector('button[value="4"]').click();
})"""

SUSPEND = """
import json
from django.contrib.auth import get_user_model
from cards.models import Card, CardState
from cards.review import get_profile, learner_today
from django.utils import timezone
user = get_user_model().objects.get(username={username!r})
today = learner_today(get_profile(user), timezone.now())
cards = Card.objects.filter(kind__in=["drill", "output"])
CardState.objects.bulk_create(
    [CardState(user=user, card=card, due=today, suspended=True) for card in cards], ignore_conflicts=True
)
print("RESULT", json.dumps(cards.count()))
"""


def sign_up(base: str) -> tuple[str, str]:
    """A new learner through the signup page, with daily limits a benchmark needs: (username, session cookie)."""
    web = requests.Session()
    username = f"bench-{uuid.uuid4().hex[:8]}"

    def post(path: str, data: dict[str, str]) -> requests.Response:
        page = web.get(base + path)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token, f"no form on {path}"
        return web.post(base + path, {**data, "csrfmiddlewaretoken": token.group(1)}, allow_redirects=False)

    password = uuid.uuid4().hex
    assert post("/accounts/signup/", {"username": username, "password1": password, "password2": password}).ok
    limits = {"time_zone": "UTC", "day_start_hour": "4", "new_cards_per_day": "1000", "reviews_per_day": "10000"}
    assert post("/settings/", limits).status_code == 302, "settings were not saved"
    return username, web.cookies["sessionid"]


def suspend_graded_cards(stack: RunStack, username: str) -> None:
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SUSPEND.format(username=username)],
        cwd=REPO,
        env=stack.environment(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    json.loads(out.split("RESULT", 1)[1])


class Learner:
    """One signed-in browser page on one stack."""

    def __init__(self, name: str, stack: RunStack, browser: Any, drill: str, references: dict[str, str]) -> None:
        self.name, self.stack, self.drill = name, stack, drill
        username, session = sign_up(stack.url)
        suspend_graded_cards(stack, username)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(30_000)
        context.add_cookies([{"name": "sessionid", "value": session, "url": stack.url}])
        self.page = context.new_page()
        self.right = references[drill]
        self.wrong = self.right.replace("return ", "return 0 * ", 1)
        self.verdicts: list[float] = []
        self.ratings: list[float] = []
        self.submits = 0
        self.failures: list[str] = []

    def open_drill(self) -> None:
        self.page.goto(f"{self.stack.url}/drills/{self.drill}/")
        self.page.wait_for_function("() => window.quizDrillEditor !== undefined")

    def verdict(self) -> None:
        code = self.right if self.submits % 2 == 0 else self.wrong
        self.submits += 1
        self.verdicts.append(float(self.page.evaluate(VERDICT_JS, code)))

    def open_review(self) -> None:
        self.page.goto(f"{self.stack.url}/review/")
        self.page.wait_for_selector("#review-panel [data-rating-form]", state="attached")

    def rating(self) -> None:
        try:
            self.ratings.append(float(self.page.evaluate(RATING_JS)))
        except PlaywrightError as exc:  # the page went elsewhere (a full reload): counted, then back to review
            self.failures.append(f"{self.page.url}: {str(exc)[:120]}")
            self.open_review()


def references() -> dict[str, str]:
    import tomllib

    found = {}
    for path in (REPO / "notes" / "drills").rglob("*.toml"):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        found[data["slug"]] = data["reference"]
    return found


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def table(learners: list[Learner]) -> str:
    rows = ["| stack | action | clicks | p50 ms | p95 ms | max ms |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for learner in learners:
        for action, values in (("click to verdict", learner.verdicts), ("rating to next card", learner.ratings)):
            if values:
                p50, p95 = statistics.median(values), percentile(values, 0.95)
                rows.append(
                    f"| {learner.name} | {action} | {len(values)} | {p50:.0f} | {p95:.0f} | {max(values):.0f} |"
                )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clicks", type=int, default=100, help="clicks of each action on each stack")
    parser.add_argument("--per-round", type=int, default=10)
    parser.add_argument("--drill", default="reverse-1d")
    parser.add_argument("--warm", type=int, default=3, help="unmeasured verdicts first (the drill's caches)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    common = {"GRADER_RATE_LIMIT": "1000000", "TASK_LOG_LEVEL": "WARNING"}
    stacks = {
        "wait": RunStack(env_overrides=common),
        "poll": RunStack(env_overrides={**common, "GRADER_SUBMIT_WAIT_MS": "0"}),
    }
    try:
        for stack in stacks.values():
            stack.start()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            refs = references()
            learners = [Learner(name, stack, browser, args.drill, refs) for name, stack in stacks.items()]
            for learner in learners:
                learner.open_drill()
                for _ in range(args.warm):
                    learner.verdict()
                learner.verdicts.clear()
            for action, opener in (("verdict", "open_drill"), ("rating", "open_review")):
                for learner in learners:
                    getattr(learner, opener)()
                done = 0
                while done < args.clicks:
                    batch = min(args.per_round, args.clicks - done)
                    order = learners if (done // args.per_round) % 2 == 0 else list(reversed(learners))
                    for learner in order:
                        for _ in range(batch):
                            getattr(learner, action)()
                    done += batch
            browser.close()
        print(table(learners))
        for learner in learners:
            for failure in learner.failures:
                print(f"{learner.name}: a rating reloaded the page: {failure}")
    finally:
        for stack in stacks.values():
            stack.stop()
            stack.destroy()


if __name__ == "__main__":
    main()
