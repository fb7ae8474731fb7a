"""The SVG charts: well-formed, escaped, accessible, and calm about empty data."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date, timedelta

import pytest

from cards.charts import (
    Bar,
    Point,
    Series,
    bar_chart,
    empty_chart,
    heat_level,
    heatmap_start,
    histogram,
    histogram_bins,
    line_chart,
    nice_step,
    year_heatmap,
)

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(\"x\")</script> & 'quotes'"


def parse(markup: str) -> ET.Element:
    root = ET.fromstring(markup)
    assert root.tag == f"{SVG}svg"
    return root


def titles(root: ET.Element) -> list[str]:
    return [el.text or "" for el in root.iter(f"{SVG}title")]


def test_it_renders_a_bar_chart_as_parseable_svg_with_a_title_per_bar() -> None:
    bars = [Bar("Mon", 3), Bar("Tue", 0), Bar("Wed", 7, detail="Wed: 7 reviews")]
    root = parse(bar_chart(bars, chart_id="reviews", title="Reviews per day"))

    assert root.get("role") == "img"
    assert root.get("aria-labelledby") == "reviews-title reviews-desc"
    assert titles(root) == ["Reviews per day", "Mon: 3", "Tue: 0", "Wed: 7 reviews"]
    values = [el.get("data-value") for el in root.iter(f"{SVG}rect") if el.get("data-value") is not None]
    assert values == ["3", "0", "7"]


def test_it_scales_the_tallest_bar_to_the_axis_top() -> None:
    root = parse(bar_chart([Bar("a", 5), Bar("b", 10)], chart_id="c", title="t"))
    heights = [float(el.get("height", "0")) for el in root.iter(f"{SVG}rect") if el.get("data-value")]
    assert heights[1] == pytest.approx(heights[0] * 2, abs=0.02)
    assert heights[1] == pytest.approx(220 - 14 - 30)  # the axis tops out at exactly 10


def test_it_escapes_hostile_text_everywhere() -> None:
    charts = [
        bar_chart([Bar(HOSTILE, 1, detail=HOSTILE)], chart_id=HOSTILE, title=HOSTILE, unit=HOSTILE),
        line_chart([Series(HOSTILE, [Point(HOSTILE, 1)])], chart_id=HOSTILE, title=HOSTILE),
        histogram({1.0: 2}, [0, 1, 2], chart_id="h", title=HOSTILE, unit=HOSTILE),
        year_heatmap({}, end=date(2026, 1, 1), chart_id=HOSTILE, title=HOSTILE, noun=HOSTILE),
        empty_chart(HOSTILE, HOSTILE, HOSTILE),
    ]
    for markup in charts:
        assert "<script" not in markup
        root = parse(markup)
        assert HOSTILE in titles(root)[0]
        assert not list(root.iter(f"{SVG}script"))
        assert all("<" not in (el.get("id") or "") for el in root.iter())


@pytest.mark.parametrize(
    "markup",
    [
        bar_chart([], chart_id="a", title="Empty bars", empty_message="No reviews yet."),
        bar_chart([Bar("x", 0), Bar("y", 0)], chart_id="a", title="Empty bars", empty_message="No reviews yet."),
        line_chart([], chart_id="a", title="Empty bars", empty_message="No reviews yet."),
        line_chart(
            [Series("s", [Point("x", None)])], chart_id="a", title="Empty bars", empty_message="No reviews yet."
        ),
        histogram({}, [1.3, 2.0, 2.5], chart_id="a", title="Empty bars", empty_message="No reviews yet."),
    ],
)
def test_it_renders_an_empty_state_instead_of_failing(markup: str) -> None:
    root = parse(markup)
    assert "chart-empty" in (root.get("class") or "")
    assert [el.text for el in root.iter(f"{SVG}text")] == ["No reviews yet."]


def test_it_breaks_a_line_at_missing_values_and_titles_each_point() -> None:
    series = [
        Series("Young", [Point("w1", 0.5), Point("w2", None), Point("w3", 0.75), Point("w4", 1.0)]),
        Series("Mature", [Point("w1", 0.9), Point("w2", 0.8), Point("w3", None), Point("w4", None)]),
    ]
    root = parse(line_chart(series, chart_id="ret", title="Retention", y_max=1))
    paths = [el.get("d", "") for el in root.iter(f"{SVG}path")]
    assert len(paths) == 3  # young: [w1] and [w3, w4]; mature: [w1, w2]
    assert [p.count("L") for p in paths] == [0, 1, 1]
    circle_titles = [el.findtext(f"{SVG}title") for el in root.iter(f"{SVG}circle")]
    assert circle_titles == ["Young, w1: 0.5", "Young, w3: 0.75", "Young, w4: 1", "Mature, w1: 0.9", "Mature, w2: 0.8"]


def test_it_bins_grouped_values_into_histogram_bars_keeping_the_outliers() -> None:
    counts = {1.3: 2, 1.5: 1, 1.98: 4, 2.5: 10, 2.7: 1, 3.1: 3}
    bars = histogram_bins(counts, [1.3, 1.5, 2.0, 2.5, 3.0])
    assert [(b.label, b.value) for b in bars] == [("1.3", 2), ("1.5", 5), ("2", 0), ("2.5", 11), ("3+", 3)]
    assert bars[1].detail == "1.5 to under 2: 5"
    assert sum(b.value for b in bars) == sum(counts.values())


def test_it_puts_values_below_the_first_edge_in_the_first_bin() -> None:
    assert [b.value for b in histogram_bins({0.5: 4, 1.0: 1}, [1, 2])] == [5, 0]
    with pytest.raises(ValueError):
        histogram_bins({}, [1])


@pytest.mark.parametrize(
    ("end", "days"),
    [
        (date(2026, 11, 23), 365),
        (date(2024, 12, 31), 366),  # the year to 2024-12-31 holds 2024-02-29
        (date(2024, 2, 29), 366),
        (date(2025, 2, 28), 366),  # starts on 2024-02-29
        (date(2025, 3, 1), 365),
        (date(2024, 3, 1), 366),
    ],
)
def test_it_covers_a_whole_year_of_days_in_the_heatmap(end: date, days: int) -> None:
    root = parse(year_heatmap({end: 4, end - timedelta(days=400): 9}, end=end, chart_id="year", title="Year"))
    cells = [el for el in root.iter(f"{SVG}rect") if el.get("data-date")]
    dates = [date.fromisoformat(el.get("data-date", "")) for el in cells]
    assert len(cells) == days
    assert len(set(dates)) == days
    assert max(dates) == end
    assert min(dates) == heatmap_start(end)
    assert (end - heatmap_start(end)).days + 1 == days
    # The day outside the window is ignored, and the day inside is the busiest.
    assert [el.get("data-count") for el in cells if el.get("data-count") != "0"] == ["4"]
    assert cells[-1].findtext(f"{SVG}title") == f"{end:%a} {end.isoformat()}: 4 reviews"


def test_it_places_heatmap_days_by_weekday_row_and_week_column() -> None:
    end = date(2026, 11, 23)  # a Monday
    root = parse(year_heatmap({}, end=end, chart_id="y", title="Year"))
    cells = {el.get("data-date"): el for el in root.iter(f"{SVG}rect") if el.get("data-date")}
    monday, sunday = cells["2026-11-23"], cells["2026-11-22"]
    assert float(monday.get("y", "")) < float(sunday.get("y", ""))  # Monday is the top row
    assert float(monday.get("x", "")) > float(sunday.get("x", ""))  # and starts a new week column
    assert "0 of 365 days" in (root.findtext(f"{SVG}desc") or "")


def test_it_grades_heat_levels_against_the_busiest_day() -> None:
    assert [heat_level(c, 100) for c in (0, 1, 25, 26, 50, 75, 76, 100)] == [0, 1, 1, 2, 2, 3, 4, 4]
    assert heat_level(3, 0) == 0


def test_it_picks_round_axis_steps() -> None:
    assert [nice_step(m) for m in (0, 4, 10, 37, 100, 0.9)] == [1.0, 1, 2.5, 10, 25, 0.25]
    assert [nice_step(m, integer=True) for m in (1, 3, 10, 37, 100)] == [1, 1, 5, 10, 50]
