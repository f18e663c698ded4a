"""Issue 11's speed work: the page tables and figures cached by content digest give exactly what
the pure builders give, equal content hits the cache, and the first page's head start
(pages.common.serve.prepare_first_page) and Home's imports stay free of Streamlit and scipy.stats
(and of Plotly: Home's tie story is inline SVG)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from core.charts import THEME_TYPES
from core.charts.fusion import movement_figure
from core.charts.metrics import metric_bars, tie_range_svg
from core.data import Qrels, Run
from core.demo import load_demo
from core.fusion import FusionParams, provenance_with
from core.metrics import parse_metrics, policy_table
from core.reports import metrics as reports
from pages.common import cache

ROOT = Path(__file__).resolve().parents[2]


def _demo() -> tuple[tuple[Run, ...], Qrels]:
    items = load_demo("evaluation")
    runs = tuple(obj for _, _, obj in items if isinstance(obj, Run))
    qrels = next(obj for _, _, obj in items if isinstance(obj, Qrels))
    return runs, qrels


def _spec(fig) -> dict:
    return json.loads(fig.to_json())


def test_tie_story_and_tables_match_the_builders():
    runs, qrels = _demo()
    metrics = tuple(parse_metrics(["mrr@10", "ndcg@10"]))
    for trad in ("trec", "input"):
        policies = tuple(reports.policies_for(trad))
        table = policy_table(cache.policy_evaluations(runs, qrels, metrics, policies), list(metrics))
        pd.testing.assert_frame_equal(cache.policy_table(runs, qrels, metrics, policies), table)
        for name in ("mrr@10", "ndcg@10"):
            story = cache.tie_story(runs, qrels, metrics, name, trad)
            flagged = reports.flipped_runs(reports.order_flips(table, name, trad))
            for kind in THEME_TYPES:
                direct = tie_range_svg(
                    table, name, trad, flagged=flagged, order_label=reports.ORDER_CHOICES[trad], theme_type=kind
                )
                assert story.svg(kind) == direct
            assert story.svg(None) == story.svg("light")  # theme not known yet: light
            assert story.sentence == reports.tie_story(table, name, trad)
            assert cache.tie_story(runs, qrels, metrics, name, trad) is story  # equal content: a cache hit
        names = [r.name for r in runs]
        pd.testing.assert_frame_equal(
            cache.summary_long(runs, qrels, metrics, ("ndcg@10",), trad),
            reports.summary_long(table, names, ["ndcg@10"], trad),
        )
        assert _spec(cache.metric_bars(runs, qrels, metrics, trad)) == _spec(
            metric_bars(table, [m.name for m in metrics], trad)
        )


def test_fusion_figures_match_the_builders():
    items = load_demo("fusion")
    runs = tuple(obj for _, _, obj in items if isinstance(obj, Run))[:2]
    params = FusionParams(method="rrf")
    qid = runs[0].qids[0]
    relevant = frozenset({"x"})
    direct = movement_figure(provenance_with(list(runs), params, [qid]), qid, depth=10, relevant=set(relevant))
    assert _spec(cache.movement_figure(runs, params, qid, 10, relevant)) == _spec(direct)


def _fresh_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, check=True
    )
    return done.stdout.strip()


def test_first_page_head_start_needs_neither_streamlit_nor_scipy_stats_nor_plotly():
    out = _fresh_python(
        "import sys\n"
        "from pages.common.serve import FIRST_PAGE_MODULES, prepare_first_page\n"
        "prepare_first_page()\n"
        "print('streamlit' in sys.modules, 'scipy.stats' in sys.modules, 'core.metrics' in sys.modules,"
        " any(m.startswith('plotly') for m in sys.modules), any('plotly' in m for m in FIRST_PAGE_MODULES))"
    )
    assert out == "False False True False False"  # Home's tie story is SVG: no Plotly to prepare


def test_head_start_settles_the_heap_even_when_preparing_fails():
    out = _fresh_python(
        "import gc\n"
        "from pages.common import serve\n"
        "def broken():\n"
        "    raise RuntimeError('demo generation failed')\n"
        "serve.prepare_first_page = broken\n"
        "serve._prepare_quietly()\n"
        "print(gc.get_freeze_count() > 0)"
    )
    assert out == "True"  # the server still starts, with what was loaded frozen


def test_home_core_imports_leave_scipy_stats_for_significance():
    out = _fresh_python(
        "import sys\nimport core.reports.metrics, core.charts.metrics, core.stats\nprint('scipy.stats' in sys.modules)"
    )
    assert out == "False"
