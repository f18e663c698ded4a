"""The tie story as inline SVG (core.charts.metrics.tie_range_svg): the content of
tie_range_figure (sorting, flags, legend, x range), theme colours, valid XML, NaN, one and many
runs, and user strings that stay inert as SVG, HTML and Markdown."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.charts import THEME_COLORS
from core.charts.metrics import (
    FLIP_COLOR,
    FLIP_SIGN,
    TIE_AWARE_COLOR,
    TRADITIONAL_MARK,
    _nice_ticks,
    tie_range_svg,
)
from tests.test_reports_tie_story import _table  # the same three runs: A/B flip, C no ties

NS = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parents[1]
#: every element the builder may write (nothing else may appear, whatever the run names are)
ELEMENTS = {"svg", "g", "title", "text", "tspan", "rect", "line", "polygon"}
HOSTILE = [
    "<script>alert(1)</script>",
    '<a href="http://127.0.0.1:9/a">a</a>',
    "![x](http://127.0.0.1:9/x.png)",
    "R&D \"quoted\" 'single'",
    "multi\n\nline **bold** $x$ :material/home: :red[x] `code` \\*",
]


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    assert {el.tag.removeprefix(NS) for el in root.iter()} <= ELEMENTS
    return root


def _rows(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{NS}g") if g.get("class") == "run"]


def _name(row: ET.Element) -> str:
    """The run name as drawn (the ⇅ sign included)."""
    label = next(t for t in row.iter(f"{NS}text"))
    return "".join(label.itertext())


def _tip(row: ET.Element) -> str:
    title = row.find(f"{NS}title")
    assert title is not None and title.text is not None
    return title.text


def _tick(row: ET.Element) -> ET.Element | None:
    return row.find(f"{NS}line")


def _texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def test_sorted_flagged_with_legend_and_tooltips():
    svg = tie_range_svg(_table(), "mrr@10", flagged=["A", "B"], order_label="trec_eval order")
    root = _parse(svg)
    rows = _rows(root)
    # sorted by tie-aware value, best first; flipped runs carry the red sign and a red tick
    assert [_name(r) for r in rows] == [f"{FLIP_SIGN} B", f"{FLIP_SIGN} A", "C<b>"]
    sign = rows[0].find(f"{NS}text/{NS}tspan")
    assert sign is not None and sign.text == FLIP_SIGN and sign.get("fill") == FLIP_COLOR
    assert rows[2].find(f"{NS}text/{NS}tspan") is None
    assert [_tick(r).get("stroke") for r in rows] == [FLIP_COLOR, FLIP_COLOR, TRADITIONAL_MARK]
    assert _tip(rows[0]).startswith("B — range [0.5200, 0.5800], tie-aware 0.5600, traditional 0.5500")
    assert _tip(rows[2]) == "C<b> — range [0.3000, 0.3000], tie-aware 0.3000, traditional 0.3000"
    texts = _texts(root)
    assert texts[0] == "mrr@10: the range ties allow, per run"
    legend = texts[1:5]
    assert legend == [
        "range ties allow [pessimistic, optimistic]",
        "tie-aware",
        "traditional (trec_eval order)",
        f"{FLIP_SIGN} order differs: traditional vs tie-aware",
    ]
    # the diamond and the range bar in the tie-aware colour; the x of the marks follows the values
    diamonds = [r.find(f"{NS}polygon") for r in rows]
    assert all(d is not None and d.get("fill") == TIE_AWARE_COLOR for d in diamonds)
    bars = [r.findall(f"{NS}rect")[1] for r in rows]
    assert all(b.get("stroke") == TIE_AWARE_COLOR and b.get("fill-opacity") == "0.28" for b in bars)
    xs = [float(_tick(r).get("x1")) for r in rows]
    assert xs[1] > xs[0] > xs[2]  # traditional 0.60 > 0.55 > 0.30


def test_no_flag_no_flip_legend_and_plain_traditional_label():
    root = _parse(tie_range_svg(_table(), "mrr@10"))
    texts = _texts(root)
    assert "traditional" in texts and not any("order differs" in t for t in texts)
    assert all(FLIP_SIGN not in _name(r) for r in _rows(root))
    assert {_tick(r).get("stroke") for r in _rows(root)} == {TRADITIONAL_MARK}


def test_traditional_column_follows_the_order():
    root = _parse(tie_range_svg(_table("input"), "mrr@10", "input", order_label="input order"))
    assert "traditional (input order)" in _texts(root)
    assert _tip(_rows(root)[1]).endswith("traditional 0.6000")


def test_x_axis_ticks_gridlines_and_range_like_the_figure():
    svg = tie_range_svg(_table(), "mrr@10")
    root = _parse(svg)
    ticks = [t for t in _texts(root) if re.fullmatch(r"-?\d+(\.\d+)?", t)]
    assert 4 <= len(ticks) <= 6, ticks
    values = [float(t) for t in ticks]
    assert values == sorted(values)
    # the figure's range: [0.30 - pad, 0.70 + pad] with pad = 0.08 * 0.40; ticks inside it
    assert values[0] >= 0.30 - 0.032 - 1e-9 and values[-1] <= 0.70 + 0.032 + 1e-9
    grid = [ln for ln in root.iter(f"{NS}line") if ln.get("stroke") == THEME_COLORS["light"]["grid"]]
    assert len(grid) == len(ticks)


@pytest.mark.parametrize(
    ("lo", "hi"),
    [(0.0, 1.0), (0.222, 0.569), (0.874, 0.907), (0.0, 0.02), (-0.3, 0.4), (0.5, 0.5 + 1e-3), (3.0, 97.0)],
)
def test_nice_ticks_four_to_six_inside_the_range(lo, hi):
    ticks = _nice_ticks(lo, hi)
    assert 4 <= len(ticks) <= 6, ticks
    assert all(lo - 1e-9 <= t <= hi + 1e-9 for t in ticks)
    steps = np.diff(ticks)
    assert np.allclose(steps, steps[0])
    mantissa = steps[0] / 10 ** np.floor(np.log10(steps[0]))
    assert any(np.isclose(mantissa, m) for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 7.5, 8))


def test_nonnegative_data_clamps_the_axis_at_zero():
    table = pd.DataFrame(
        {"run": ["a"], "metric": "m", "trec": [0.0], "expected": [0.01], "pessimistic": [0.0], "optimistic": [0.02]}
    )
    ticks = [float(t) for t in _texts(_parse(tie_range_svg(table, "m"))) if re.fullmatch(r"-?\d+(\.\d+)?", t)]
    assert min(ticks) == 0.0  # not below: the padded range starts at 0


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_theme_colours_and_transparent_background(theme):
    svg = tie_range_svg(_table(), "mrr@10", theme_type=theme)
    root = _parse(svg)
    colors = THEME_COLORS[theme]
    title = next(root.iter(f"{NS}text"))
    assert title.get("fill") == colors["text"]
    assert all(_name_el.get("fill") == colors["text"] for _name_el in (r.find(f"{NS}text") for r in _rows(root)))
    assert any(ln.get("stroke") == colors["grid"] for ln in root.iter(f"{NS}line"))
    other = THEME_COLORS["dark" if theme == "light" else "light"]
    assert title.get("fill") != other["text"]
    assert "background:transparent" in root.get("style", "")
    # no opaque rectangle behind the plot: the only rects are bars, swatches and hover areas
    assert all(r.get("fill") != colors["background"] for r in root.iter(f"{NS}rect"))


def test_unknown_or_missing_theme_is_light():
    assert tie_range_svg(_table(), "mrr@10", theme_type=None) == tie_range_svg(_table(), "mrr@10", theme_type="light")
    assert tie_range_svg(_table(), "mrr@10", theme_type="sepia") == tie_range_svg(_table(), "mrr@10")


def test_responsive_size_accessibility_and_height_per_run():
    root = _parse(tie_range_svg(_table(), "mrr@10"))
    assert root.get("width") == "100%"
    assert root.get("role") == "img"
    assert root.get("aria-label", "").startswith("mrr@10: the range ties allow, per run")
    width, height = (float(v) for v in root.get("viewBox", "").split()[2:])
    assert float(root.get("height", "0")) == height and width > 0
    assert abs(height - (90 + 40 * 3)) <= 20
    five = pd.concat([_table().assign(run=lambda t, i=i: t["run"] + str(i)) for i in range(2)]).head(5)
    height5 = float(_parse(tie_range_svg(five, "mrr@10")).get("height", "0"))
    assert height5 <= 320  # Home at 1440x900: title, controls and figure above the fold


def test_nan_draws_no_mark_and_says_na():
    table = pd.DataFrame(
        {
            "run": ["full", "no range", "no tie-aware", "nothing"],
            "metric": "m",
            "trec": [0.5, 0.4, np.nan, np.nan],
            "expected": [0.5, 0.45, np.nan, np.nan],
            "pessimistic": [0.4, np.nan, 0.1, np.nan],
            "optimistic": [0.6, 0.5, 0.3, np.nan],
        }
    )
    root = _parse(tie_range_svg(table, "m"))
    rows = {_name(r): r for r in _rows(root)}
    assert list(rows) == ["full", "no range", "no tie-aware", "nothing"]  # NaN sorts last, as in the figure
    marks = {name: {el.tag.removeprefix(NS) for el in row} - {"title", "text"} for name, row in rows.items()}
    assert marks["full"] == {"rect", "line", "polygon"}
    assert len(rows["full"].findall(f"{NS}rect")) == 2  # hover area + range bar
    assert len(rows["no range"].findall(f"{NS}rect")) == 1 and "polygon" in marks["no range"]
    assert "polygon" not in marks["no tie-aware"] and "line" not in marks["no tie-aware"]
    assert marks["nothing"] == {"rect"}  # only the hover area
    assert _tip(rows["no range"]) == "no range — range [n/a, 0.5000], tie-aware 0.4500, traditional 0.4000"
    assert _tip(rows["nothing"]) == "nothing — range [n/a, n/a], tie-aware n/a, traditional n/a"
    assert "nan" not in ET.tostring(root, encoding="unicode").lower().replace("n/a", "")


def test_one_run_and_no_run():
    one = _parse(tie_range_svg(_table().head(1), "mrr@10"))
    assert [_name(r) for r in _rows(one)] == ["A"]
    assert 4 <= len([t for t in _texts(one) if re.fullmatch(r"-?\d+(\.\d+)?", t)]) <= 6
    none = _parse(tie_range_svg(_table(), "map"))
    assert _rows(none) == [] and "No run has a value for map." in _texts(none)


def test_many_runs_grow_the_height_and_cut_long_names():
    n = 60
    table = pd.DataFrame(
        {
            "run": [f"run {i:02d} " + "with a long descriptive name" * (i % 2) for i in range(n)],
            "metric": "m",
            "trec": np.linspace(0, 1, n),
            "expected": np.linspace(1, 0, n),
            "pessimistic": np.linspace(0, 0.5, n),
            "optimistic": np.linspace(0.5, 1, n),
        }
    )
    root = _parse(tie_range_svg(table, "m"))
    rows = _rows(root)
    assert len(rows) == n
    assert float(root.get("height", "0")) == pytest.approx(90 + 40 * n, abs=20)
    long = rows[1]  # run 01 (expected is decreasing: sorted as given)
    assert _name(long).endswith("…") and len(_name(long)) <= 30
    assert _tip(long).startswith("run 01 with a long descriptive name —")  # the full name on hover
    ys = [float(r.find(f"{NS}polygon").get("points").split()[1].split(",")[1]) for r in rows]
    assert ys == sorted(ys)  # top to bottom


@pytest.mark.parametrize("name", HOSTILE)
def test_user_strings_are_inert(name):
    table = _table().assign(run=[name, "B", "C"], metric=f"m {name}")
    svg = tie_range_svg(table, f"m {name}", flagged=[name], order_label=f"o {name}")
    root = _parse(svg)  # still valid XML: nothing closed the element early
    assert len(_rows(root)) == 3
    # no markup and no Markdown syntax in the text: tags escaped, Markdown characters as references
    assert "<script" not in svg and "<a " not in svg and "<a\n" not in svg
    body = svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    for raw in ("![", "](", "**", "http://", "$x$", ":red[", "`", "\n\n"):
        assert raw not in body, raw
    # and the reader sees the name as it was (line breaks aside), in the label and the tooltip
    shown = name.replace("\n", " ")
    tips = [_tip(r) for r in _rows(root)]
    assert any(t.replace("\n", " ").startswith(shown if len(shown) <= 30 else shown[:10]) for t in tips)
    assert f"m {name}: the range ties allow, per run" in [t.replace("\r", "") for t in _texts(root)]
    assert f"traditional (o {name})" in _texts(root)
    assert any(_name(r).startswith(f"{FLIP_SIGN} ") for r in _rows(root))


def test_quotes_cannot_leave_an_attribute():
    svg = tie_range_svg(_table(), 'x" onload="alert(1)', order_label="y' onmouseover='alert(2)")
    root = _parse(svg)
    assert all(not k.startswith("on") for el in root.iter() for k in el.attrib)
    assert 'x" onload' not in svg and "y' onmouseover" not in svg


def test_the_figure_module_needs_no_plotly_for_the_svg():
    code = (
        "import sys\nimport pandas as pd\nfrom core.charts.metrics import tie_range_svg\n"
        "t = pd.DataFrame({'run': ['a'], 'metric': 'm', 'trec': [0.5], 'expected': [0.5],"
        " 'pessimistic': [0.4], 'optimistic': [0.6]})\n"
        "tie_range_svg(t, 'm')\nprint(any(m.startswith('plotly') for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# ---- the phone layout (issue 21: legible on a 390 px screen) -----------------------------------
def test_compact_layout_has_the_same_rows_tips_and_marks_in_360_units():
    from core.charts.metrics import COMPACT

    wide = _parse(tie_range_svg(_table(), "mrr@10", flagged=["A", "B"], order_label="trec_eval order"))
    compact = _parse(
        tie_range_svg(_table(), "mrr@10", flagged=["A", "B"], order_label="trec_eval order", layout=COMPACT)
    )
    assert compact.get("viewBox", "").startswith("0 0 360 ")
    assert compact.get("height") is None and "height:auto" in compact.get("style", "")  # scales to the screen
    assert [_name(r) for r in _rows(compact)] == [_name(r) for r in _rows(wide)]
    assert [_tip(r) for r in _rows(compact)] == [_tip(r) for r in _rows(wide)]
    assert [_tick(r) is not None for r in _rows(compact)] == [_tick(r) is not None for r in _rows(wide)]
    for row in _rows(compact):  # each name on its own line, left-aligned above its bar
        label = next(row.iter(f"{NS}text"))
        bar = next(r for r in row.iter(f"{NS}rect") if r.get("fill-opacity") != "0")
        assert label.get("text-anchor") is None and float(label.get("y", 0)) < float(bar.get("y", 0))
    # the legend wraps inside the 360 units: no item starts past the width, several rows
    starts = [
        (float(m.group(1)), float(m.group(2)))
        for g in compact.iter(f"{NS}g")
        if (m := re.fullmatch(r"translate\(([\d.]+),([\d.]+)\)", g.get("transform", "")))
    ]
    assert len({y for _, y in starts}) >= 2 and all(x < 360 for x, _ in starts)
    for t in compact.iter(f"{NS}text"):  # no text smaller than 12 units (~11.9 px at 358 px wide)
        assert float(t.get("font-size", "13")) >= 12


def test_compact_layout_cuts_long_names_later_than_the_wide_one():
    from core.charts.metrics import COMPACT

    long = "a-very-long-run-name-of-forty-two-characters"
    table = _table().replace({"run": {"A": long}})
    compact = _parse(tie_range_svg(table, "mrr@10", layout=COMPACT))
    wide = _parse(tie_range_svg(table, "mrr@10"))
    assert long in [_name(r) for r in _rows(compact)]
    assert long not in [_name(r) for r in _rows(wide)]


# ---- intervals over queries (issue 22): a whisker per run ---------------------------------------
def test_interval_whiskers_tooltips_legend_and_range():
    from core.charts.metrics import RunCI

    cis = {"A": RunCI(0.05, 0.95, 1), "B": RunCI(0.45, 0.66, 1), "C<b>": RunCI(0.2, 0.4, 2)}
    plain = _parse(tie_range_svg(_table(), "mrr@10"))
    root = _parse(tie_range_svg(_table(), "mrr@10", intervals=cis, interval_label="95% CI over queries (t)"))
    assert "95% CI over queries (t)" in _texts(root) and "95% CI over queries (t)" not in _texts(plain)
    for row in _rows(root):
        run = _name(row).removeprefix("⇅ ")
        ci = cis[run]
        assert f"95% CI over queries (t) [{ci.low:.4f}, {ci.high:.4f}], tier {ci.tier}" in _tip(row)
        lines = row.findall(f"{NS}line")
        assert len(lines) == len([t for t in lines if t.get("stroke-width") == "1.5"]) + 1  # 3 whisker lines + the tick
    # the x axis grows to hold the widest whisker (0.05 .. 0.95)
    ticks = [float(t) for t in _texts(root) if re.fullmatch(r"\d\.\d+", t)]
    assert min(ticks) <= 0.1 and max(ticks) >= 0.9
    assert _texts(plain) != _texts(root)
