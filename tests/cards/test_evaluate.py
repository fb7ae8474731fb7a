"""The evaluate command scores a review log as srs-benchmark does.

The main check recomputes every figure on the fixture with an independent implementation: pandas
for the per-card bookkeeping, SM-2 with Fractions, FSRS-6's formulas written out again (only the
default parameters are shared with the package), and scikit-learn's metrics.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fsrs.scheduler import DEFAULT_PARAMETERS
from sklearn.metrics import log_loss, roc_auc_score, root_mean_squared_error

from cards.scheduling import evaluate

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "revlog" / "revlog.csv"


# --- the independent implementation ------------------------------------------------------------


def sm2_intervals(qualities: list[int], days: list[int]) -> list[int]:
    """The interval in force after each review; a same-day review leaves it (SM-2 step 7)."""
    ef, interval, reps, out = Fraction(5, 2), 0, 0, []
    for k, q in enumerate(qualities):
        if k == 0 or days[k] > days[k - 1]:
            if q >= 3:
                interval = 1 if reps == 0 else 6 if reps == 1 else math.ceil(interval * ef)
                reps += 1
            else:
                reps, interval = 0, 1
            miss = 5 - q
            ef = max(Fraction(13, 10), ef + Fraction(1, 10) - miss * (Fraction(8, 100) + miss * Fraction(2, 100)))
        out.append(interval)
    return out


def fsrs6_retrievabilities(ratings: list[int], days: list[int]) -> list[float]:
    """FSRS-6 with no learning steps, from its published formulas: R before each review (0 first)."""
    w = DEFAULT_PARAMETERS
    decay = -w[20]
    factor = 0.9 ** (1 / decay) - 1

    def d0(r: int) -> float:
        return w[4] - math.exp(w[5] * (r - 1)) + 1

    s = d = 0.0
    out = []
    for k, (r, day) in enumerate(zip(ratings, days, strict=True)):
        if k == 0:
            out.append(0.0)
            s, d = max(w[r - 1], 0.001), min(max(d0(r), 1), 10)
            continue
        t = day - days[k - 1]
        retention = (1 + factor * t / s) ** decay
        out.append(retention)
        if t == 0:
            growth = math.exp(w[17] * (r - 3 + w[18])) * s ** -w[19]
            new_s = s * (max(growth, 1.0) if r > 1 else growth)
        elif r == 1:
            long_term = w[11] * d ** -w[12] * ((s + 1) ** w[13] - 1) * math.exp((1 - retention) * w[14])
            new_s = min(long_term, s / math.exp(w[17] * w[18]))
        else:
            bonus = w[15] if r == 2 else w[16] if r == 4 else 1
            new_s = s * (1 + math.exp(w[8]) * (11 - d) * s ** -w[9] * (math.exp((1 - retention) * w[10]) - 1) * bonus)
        s = max(new_s, 0.001)
        damped = d + (10 - d) * (-w[6] * (r - 3)) / 9
        d = min(max(w[7] * d0(4) + (1 - w[7]) * damped, 1), 10)
    return out


def independent_report(path: Path) -> dict:
    df = pd.read_csv(path, dtype={"card_id": str})
    df["position"] = np.arange(len(df))
    df = df.sort_values(["card_id", "day", "position"]).reset_index(drop=True)
    cards = df.groupby("card_id", sort=False)
    df["i"] = cards.cumcount() + 1
    df["t"] = cards["day"].diff()
    df["y"] = (df["rating"] != 1).astype(int)
    lapse_here = ((df["rating"] == 1) & (df["t"] > 0)).astype(int)
    df["lapses"] = lapse_here.groupby(df["card_id"]).transform(lambda s: s.cumsum().shift(fill_value=0))
    quality = df["rating"].map({1: 1, 2: 3, 3: 4, 4: 5})
    df["interval_before"] = 0
    df["p_fsrs"] = 0.0
    for _, index in cards.groups.items():
        days = df.loc[index, "day"].tolist()
        intervals = sm2_intervals(quality.loc[index].tolist(), days)
        df.loc[index, "interval_before"] = [0, *intervals[:-1]]
        df.loc[index, "p_fsrs"] = fsrs6_retrievabilities(df.loc[index, "rating"].tolist(), days)
    test = df[df["t"] > 0].copy()
    test["p_sm2"] = 0.9 ** (test["t"] / test["interval_before"])
    test["t_bin"] = test["t"].map(lambda x: round(2.48 * np.power(3.62, np.floor(np.log(x) / np.log(3.62))), 2))
    test["i_bin"] = test["i"].map(lambda x: round(1.99 * np.power(1.89, np.floor(np.log(x) / np.log(1.89))), 0))
    test["l_bin"] = test["lapses"].map(
        lambda x: round(1.65 * np.power(1.73, np.floor(np.log(x) / np.log(1.73))), 0) if x != 0 else 0
    )
    out: dict = {"n": len(test)}
    for name in ("sm2", "fsrs"):
        p = test[f"p_{name}"].clip(1e-15, 1 - 1e-15)
        bins = (
            test.assign(p=test[f"p_{name}"], weights=1)
            .groupby(["t_bin", "i_bin", "l_bin"])
            .agg({"y": "mean", "p": "mean", "weights": "sum"})
        )
        out[name] = {
            "log_loss": log_loss(test["y"], p, labels=[0, 1]),
            "rmse_bins": root_mean_squared_error(bins["y"], bins["p"], sample_weight=bins["weights"]),
            "auc": roc_auc_score(test["y"], test[f"p_{name}"]),
        }
    return out


# --- the tests ---------------------------------------------------------------------------------


def test_it_agrees_with_an_independent_implementation_on_the_fixture() -> None:
    with open(FIXTURE, encoding="utf-8", newline="") as handle:
        ours = evaluate.evaluate(evaluate.read_revlog(handle))
    theirs = independent_report(FIXTURE)
    assert ours["n"] == theirs["n"] > 1500
    for name in ("sm2", "fsrs"):
        for metric in ("log_loss", "rmse_bins", "auc"):
            assert ours[name][metric] == pytest.approx(theirs[name][metric], abs=1e-6), (name, metric)
    # The fixture separates the two schedulers, so a swapped prediction would show.
    assert ours["fsrs"]["log_loss"] < ours["sm2"]["log_loss"] - 1


def test_it_prints_one_json_line_from_the_command_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cards.scheduling.evaluate", str(FIXTURE), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    payload = json.loads(lines[0])
    assert set(payload) == {"n", "sm2", "fsrs", "avg", "moving_avg"}  # the first three keys as before
    assert set(payload["fsrs"]) == set(payload["moving_avg"]) == {"log_loss", "rmse_bins", "auc"}
    assert payload["n"] == independent_report(FIXTURE)["n"]


def test_given_parameters_are_scored_from_a_day_on_as_the_calibration_page_scores_them(capsys) -> None:
    from cards.scheduling import calibration, synthetic

    fitted = synthetic.distinct_parameters()
    with open(FIXTURE, encoding="utf-8", newline="") as handle:
        reviews = evaluate.read_revlog(handle)
    days = sorted(p.day for p in evaluate.test_points(reviews))
    split_day = days[len(days) * 7 // 10]
    given = ",".join(repr(w) for w in fitted)
    assert evaluate.main([str(FIXTURE), "--json", "--parameters", given, "--from-day", str(split_day)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"n", "sm2", "fsrs", "avg", "moving_avg", "parameters", "from_day", "fsrs_default"}
    assert payload["parameters"] == "given" and payload["from_day"] == split_day
    page = calibration.report(reviews, fitted, split_day)
    assert page.scope == "held_out" and payload["n"] == page.test_points == len(days) - len(days) * 7 // 10
    for name in ("fsrs", "fsrs_default", "sm2", "avg", "moving_avg"):
        assert payload[name] == pytest.approx(page.scores[name]), name
    assert evaluate.main([str(FIXTURE), "--parameters", "1,2"]) == 2  # not FSRS-6's 21


def test_it_prints_a_table_without_json(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("card_id,day,rating\na,0,3\na,1,3\na,7,1\nb,0,3\nb,2,3\n")
    assert evaluate.main([str(log)]) == 0


def test_it_loads_neither_django_nor_torch() -> None:
    code = "import sys, cards.scheduling.evaluate; print(sorted(m for m in ('django', 'torch') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_it_scores_a_small_log_by_hand() -> None:
    reviews = evaluate.read_revlog(
        [
            "card_id,day,rating",
            "a,0,3",  # first review: never a test point; SM-2 gives 1 day
            "a,1,3",  # t=1, I=1: p=0.9; SM-2 then gives 6 days
            "a,1,1",  # t=0: not a test point, and a same-day repeat leaves SM-2's 6 days
            "a,13,1",  # t=12, I=6: p=0.81, i=4, no lapse yet (the Again above had t=0)
            "a,14,3",  # t=1, I=1, one lapse
        ]
    )
    points = evaluate.test_points(reviews)
    assert [(p.t, p.i, p.lapses, p.y) for p in points] == [(1, 2, 0, 1), (12, 4, 0, 0), (1, 5, 1, 1)]
    assert [p.p_sm2 for p in points] == pytest.approx([0.9, 0.81, 0.9])
    assert [evaluate.bin_key(p.t, p.i, p.lapses) for p in points] == [(2.48, 4, 0), (8.98, 7, 0), (2.48, 7, 2)]


def test_a_drills_first_attempt_is_acquisition_never_a_scored_recall() -> None:
    # A new drill failed on its first attempt, solved on the same-day repeat, then reviewed two days later:
    # only the last is a recall (issue 39); the first two set the memory state and are never scored.
    reviews = evaluate.read_revlog(["card_id,day,rating", "drill,10,1", "drill,10,3", "drill,12,3"])
    assert [(p.day, p.i) for p in evaluate.test_points(reviews)] == [(12, 3)]


def test_the_baselines_predict_from_earlier_outcomes_only() -> None:
    reviews = evaluate.read_revlog(
        [
            "card_id,day,rating",
            "a,0,3",  # first reviews: never scored, never counted
            "b,0,1",
            "a,1,1",  # scored: nothing earlier, both at the prior 0.9; then a failure
            "b,1,3",  # same day: AVG still has no earlier day; MOVING-AVG has moved towards 0
            "b,1,3",  # t=0: neither scored nor counted
            "a,3,3",  # AVG: 1 of 2 on earlier days
        ]
    )
    points = evaluate.test_points(reviews)
    found = evaluate.baselines(reviews, points)
    step, prior = evaluate.MOVING_STEP, evaluate.BASELINE_PRIOR
    after_a = prior + step * (0 - prior)
    after_b = after_a + step * (1 - after_a)
    by_point = {(p.card_id, p.day): k for k, p in enumerate(points)}
    assert [found["avg"][by_point[key]] for key in (("a", 1), ("b", 1), ("a", 3))] == [prior, prior, 0.5]
    moving = [found["moving_avg"][by_point[key]] for key in (("a", 1), ("b", 1), ("a", 3))]
    assert moving == pytest.approx([prior, after_a, after_b])


def test_it_counts_tied_predictions_half_in_auc() -> None:
    assert evaluate.auc([1, 0], [0.5, 0.5]) == 0.5
    assert evaluate.auc([1, 0, 1, 0], [0.9, 0.1, 0.4, 0.4]) == 0.875
    assert evaluate.auc([1, 1], [0.2, 0.9]) is None


def test_it_clips_predictions_in_log_loss() -> None:
    assert evaluate.log_loss([1], [0.0]) == pytest.approx(-math.log(1e-15))


def test_it_reports_nothing_to_score_as_empty() -> None:
    result = evaluate.evaluate(evaluate.read_revlog(["card_id,day,rating", "a,3,3"]))
    empty = evaluate.Scores(log_loss=None, rmse_bins=None, auc=None)
    assert result == {"n": 0, "sm2": empty, "fsrs": empty, "avg": empty, "moving_avg": empty}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("card,day,rating\na,1,3\n", "line 1: the header lacks card_id"),
        ("card_id,day,rating\na,1.5,3\n", "line 2: day must be an integer"),
        ("card_id,day,rating\na,1,3\na,2,5\n", "line 3: rating must be 1, 2, 3 or 4"),
        ("card_id,day,rating\n,1,3\n", "line 2: card_id is empty"),
    ],
)
def test_it_names_the_line_of_a_bad_row(tmp_path: Path, text: str, message: str, capsys) -> None:
    log = tmp_path / "log.csv"
    log.write_text(text)
    assert evaluate.main([str(log), "--json"]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.out == ""
