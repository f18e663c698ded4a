"""Seed 001: "Evaluation Metrics Documentation — Hybrid RAG System with Automated Evaluation"
(`../shared/seeds/001_6667910a753a1b65.txt`). Every worked example and every printed number
of the seed, reproduced by a named test citing its section; where RankLens differs, the test
asserts RankLens' value and says why.

- 1.3 MRR example (0.458) — `test_s1_3_mrr_example`
- 1.5 / 2.5 / 3.5 interpretation bands — `test_s1_5_*`, `test_s2_5_*`, `test_s3_5_*`
- 1.6 / 2.6 / 3.6 / 4.2 result tables and their interpretations — `test_s1_6_*` ... `test_s4_2_*`
- 2.3 Recall@10 example (0.5) — `test_s2_3_recall_example`; the cut-then-dedup rule of 2.3
  and 2.4 (top 10 chunks first, then unique URLs) vs dedup-then-cut (issue 10's example)
- 2.4 the seed's ``compute_recall_at_k`` — `test_s2_4_recall_matches_the_seeds_function`
- 3.3 Answer F1 example (0.923) — `test_s3_3_answer_f1_example`
- 3.4 the seed's ``normalize`` and its ``[^w\\s]`` typo — `test_s3_4_*`
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import oracle
import pandas as pd
import pytest
from cli_zygote import run_core
from hypothesis import given
from hypothesis import strategies as st

from core.answers import STOPWORDS, answer_scores, evaluate_answers, set_f1, set_tokens
from core.bands import BANDS, band, band_of, band_scale, with_bands
from core.chunks import evaluate_chunks
from core.data import Qrels, Run
from core.metrics import evaluate

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT.parent / "shared" / "seeds" / "001_6667910a753a1b65.txt"


def chunk_run(rows: list[tuple[str, str, float]], name: str = "hybrid") -> Run:
    return Run.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "score"]), name)


def chunk_map(pairs: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({"chunk_id": list(pairs), "doc_id": list(pairs.values())})


# ---------------------------------------------------------------------------------------
# Section 1: MRR
# ---------------------------------------------------------------------------------------
def test_s1_3_mrr_example():
    """1.3: relevant URL at ranks 1, 3, 2 and not found -> (1 + 0.333 + 0.5 + 0) / 4 = 0.458.

    As chunk runs (cut-then-dedup, the seed's reading: 1 / the position of the first chunk
    of a relevant URL) and as document runs: the same numbers."""
    first_relevant = {"Q1": 1, "Q2": 3, "Q3": 2, "Q4": None}
    rows, pairs = [], {}
    for qid, rank in first_relevant.items():
        for pos in range(1, 6):
            url = "url_rel" if pos == rank else f"url_{qid}_{pos}"
            rows.append((qid, f"{qid}#{pos}", 10.0 - pos))
            pairs[f"{qid}#{pos}"] = url
    qrels = Qrels.from_dict({q: {"url_rel": 1} for q in first_relevant})
    chunks = evaluate_chunks(chunk_run(rows), qrels, chunk_map(pairs), ["mrr"], "trec")
    per_query = dict(zip(chunks.qids.tolist(), chunks.values["hybrid"]["mrr"].tolist(), strict=True))
    assert per_query == {"Q1": 1.0, "Q2": 1 / 3, "Q3": 0.5, "Q4": 0.0}
    mrr = chunks.means["hybrid"]["mrr"]
    assert round(mrr, 3) == 0.458 and mrr == pytest.approx((1 + 1 / 3 + 1 / 2 + 0) / 4)
    docs = chunk_run([(q, pairs[c], s) for q, c, s in rows], "docs")
    assert evaluate(docs, qrels, ["mrr"], "trec").means["docs"]["mrr"] == pytest.approx(mrr, abs=1e-15)


def test_s1_5_mrr_bands_and_boundaries():
    """1.5: 0.90-1.00 Excellent, 0.70-0.89 Good, 0.50-0.69 Moderate, 0.30-0.49 Fair,
    0.00-0.29 Poor. Boundary rule (the seed's two-decimal ranges leave 0.89..0.90 open):
    each band from its lower bound inclusive to the next one exclusive."""
    assert [(b.label, b.low) for b in BANDS["mrr"]] == [
        ("Excellent", 0.90),
        ("Good", 0.70),
        ("Moderate", 0.50),
        ("Fair", 0.30),
        ("Poor", 0.00),
    ]
    expected = {
        1.0: "Excellent",
        0.90: "Excellent",
        0.8999: "Good",
        0.895: "Good",
        0.89: "Good",
        0.70: "Good",
        0.69: "Moderate",
        0.50: "Moderate",
        0.4999: "Fair",
        0.30: "Fair",
        0.29: "Poor",
        0.0: "Poor",
    }
    for value, label in expected.items():
        assert band("mrr", value) == label, value
    assert band_of("mrr", 0.95).meaning == "Relevant docs almost always rank first"
    for name in ("mrr", "MRR@10", "mrr@3", "recip_rank", "mtrr@10", "mtrr"):
        assert band_scale(name) == "mrr", name
    for value in (-0.01, 1.01, math.nan):
        assert band("mrr", value) is None


def test_s1_6_mrr_results_interpretation():
    """1.6: Dense 0.3025 "Fair", Hybrid 0.3783 "Fair"; Sparse 0.4392 "Fair-Moderate" in the
    seed's prose. RankLens: Fair for all three: 0.4392 lies in the seed's own 0.30-0.49 band;
    "Fair-Moderate" is a remark on the best method, not one of the section 1.5 bands."""
    assert band("mrr", 0.3025) == "Fair"
    assert band("mrr", 0.3783) == "Fair"
    assert band("mrr", 0.4392) == "Fair"  # the seed says "Fair-Moderate"


# ---------------------------------------------------------------------------------------
# Section 2: Recall@10
# ---------------------------------------------------------------------------------------
def test_s2_3_recall_example():
    """2.3: ground truth [url_A, url_B]; the top 10 chunks' URLs [url_A, url_C, url_D, url_E,
    ...]; intersection {url_A}: Recall@10 = 1/2 = 0.5 (the same under both collapses here:
    no URL repeats in the top 10)."""
    urls = ["url_A", "url_C", "url_D", "url_E", "url_F", "url_G", "url_H", "url_I", "url_J", "url_K", "url_B"]
    rows = [("q", f"c{i}", 100.0 - i) for i in range(len(urls))]
    pairs = {f"c{i}": u for i, u in enumerate(urls)}
    qrels = Qrels.from_dict({"q": {"url_A": 1, "url_B": 1}})
    for collapse in ("cut-then-dedup", "dedup-then-cut"):
        ev = evaluate_chunks(chunk_run(rows), qrels, chunk_map(pairs), ["recall@10"], "trec", collapse=collapse)
        assert ev.means["hybrid"]["recall@10"] == 0.5


def test_s2_3_top_10_chunks_first_then_unique_urls():
    """2.3 "Step 1: retrieve top 10 chunks; Step 2: extract unique source URLs" (issue 10's
    example): 10 chunks of url_A, url_B's chunk 11th. cut-then-dedup (the seed's, the
    default) 0.5; dedup-then-cut (RankLens' earlier collapse) 1.0."""
    rows = [("q", f"a{i}", 50.0 - i) for i in range(10)] + [("q", "b0", 1.0)]
    pairs = {**{f"a{i}": "url_A" for i in range(10)}, "b0": "url_B"}
    qrels = Qrels.from_dict({"q": {"url_A": 1, "url_B": 1}})
    default = evaluate_chunks(chunk_run(rows), qrels, chunk_map(pairs), ["recall@10"], "trec")
    dedup = evaluate_chunks(chunk_run(rows), qrels, chunk_map(pairs), ["recall@10"], "trec", collapse="dedup-then-cut")
    assert default.means["hybrid"]["recall@10"] == 0.5
    assert dedup.means["hybrid"]["recall@10"] == 1.0


def test_s2_3_tied_chunk_at_the_cutoff_is_exact():
    """Not in the seed (its retriever breaks ties silently): url_A's 10th chunk and url_B's
    only chunk tie at positions 10-11. Over the two orderings url_B is in the top 10 once:
    expected 0.75, optimistic 1.0, pessimistic 0.5 (all exact)."""
    rows = [("q", f"a{i}", 50.0 - i) for i in range(9)] + [("q", "a9", 1.0), ("q", "b0", 1.0)]
    pairs = {**{f"a{i}": "url_A" for i in range(10)}, "b0": "url_B"}
    qrels = Qrels.from_dict({"q": {"url_A": 1, "url_B": 1}})
    got = {
        ties: evaluate_chunks(chunk_run(rows), qrels, chunk_map(pairs), ["recall@10"], ties).means["hybrid"][
            "recall@10"
        ]
        for ties in ("expected", "optimistic", "pessimistic", "trec")
    }
    assert got == {"expected": 0.75, "optimistic": 1.0, "pessimistic": 0.5, "trec": 1.0}  # trec: b0 > a9


def compute_recall_at_k(retrieved_urls, relevant_urls, k=10):
    """Section 2.4, the seed's implementation (verbatim but for the docstring)."""
    if not relevant_urls:
        return 0.0

    retrieved_set = set(retrieved_urls[:k])
    relevant_set = set(relevant_urls)

    intersection = retrieved_set & relevant_set
    recall = len(intersection) / len(relevant_set)

    return recall


@oracle.hypothesis_settings(100)
@given(
    urls=st.lists(st.sampled_from(["u1", "u2", "u3", "u4", "u5", "u6"]), min_size=1, max_size=25),
    relevant=st.lists(st.sampled_from(["u1", "u2", "u3", "u7"]), max_size=3, unique=True),
    k=st.sampled_from([1, 3, 10]),
)
def test_s2_4_recall_matches_the_seeds_function(urls, relevant, k):
    """2.4: ``compute_recall_at_k`` over the URLs of the ranked chunks (duplicates kept)
    equals RankLens' recall@k with a chunk map (cut-then-dedup), for any chunk list."""
    rows = [("q", f"c{i}", float(len(urls) - i)) for i in range(len(urls))]
    pairs = {f"c{i}": u for i, u in enumerate(urls)}
    judged = dict.fromkeys(relevant, 1) or {"other": 0}
    ev = evaluate_chunks(chunk_run(rows), Qrels.from_dict({"q": judged}), chunk_map(pairs), [f"recall@{k}"], "trec")
    assert ev.means["hybrid"][f"recall@{k}"] == compute_recall_at_k(urls, relevant, k)


def test_s2_5_recall_bands():
    """2.5: the same thresholds as MRR, with their own meanings; only Recall@10 has them."""
    assert [(b.label, b.low) for b in BANDS["recall@10"]] == [(b.label, b.low) for b in BANDS["mrr"]]
    assert band_of("recall@10", 0.95).meaning == "Almost all relevant docs in top 10"
    assert band_of("recall@10", 0.1).meaning == "Most relevant docs not in top 10"
    assert band("recall@10", 0.9) == "Excellent" and band("recall_10", 0.5) == "Moderate"
    assert band("recall@5", 0.9) is None and band("recall@100", 0.9) is None  # thresholds are for 10


def test_s2_6_recall_results_interpretation():
    """2.6: Dense 0.33 "Fair", Hybrid 0.43 "Fair"; Sparse 0.47 "Fair-Moderate" in the seed's
    prose, Fair by its 0.30-0.49 band (see section 1.6)."""
    assert [band("recall@10", v) for v in (0.33, 0.47, 0.43)] == ["Fair", "Fair", "Fair"]


# ---------------------------------------------------------------------------------------
# Section 3: Answer F1
# ---------------------------------------------------------------------------------------
GENERATED = "The capital of France is Paris"
REFERENCE = "Paris is the capital city of France"


def test_s3_3_answer_f1_example():
    """3.3: generated {the, capital, of, france, is, paris}, reference {paris, is, the,
    capital, city, of, france}; common 6; P = 6/6, R = 6/7 = 0.857; F1 = 0.923."""
    gen, ref = set_tokens(GENERATED), set_tokens(REFERENCE)
    assert gen == {"the", "capital", "of", "france", "is", "paris"}
    assert ref == {"paris", "is", "the", "capital", "city", "of", "france"}
    assert len(gen & ref) == 6 and len(gen) == 6 and len(ref) == 7
    assert round(6 / 7, 3) == 0.857
    f1 = set_f1(GENERATED, REFERENCE)
    assert round(f1, 3) == 0.923 and f1 == pytest.approx(12 / 13)
    scored = answer_scores(pd.DataFrame({"qid": ["ex"], "prediction": [GENERATED], "references": [[REFERENCE]]}))
    assert scored.loc[0, "set_f1"] == f1
    # SQuAD's token F1 (articles removed, bags of tokens) is a different, separately named measure
    assert scored.loc[0, "token_f1"] == pytest.approx(10 / 11) and scored.loc[0, "em"] == 0.0


def test_s3_3_optional_stopword_removal():
    """3.3 step 4 "Remove stopwords (optional)": the seed gives no list; with RankLens'
    `STOPWORDS` the example keeps {capital, france, paris} vs {paris, capital, city, france}."""
    assert set_tokens(GENERATED, STOPWORDS) == {"capital", "france", "paris"}
    assert set_f1(GENERATED, REFERENCE, STOPWORDS) == pytest.approx(2 * (3 / 4) / (1 + 3 / 4))
    answers = pd.DataFrame({"qid": ["ex"], "prediction": [GENERATED], "references": [[REFERENCE]]})
    assert evaluate_answers(answers, "set_f1", stopwords=True).means["set_f1"] == pytest.approx(6 / 7)


def seed_normalize_as_printed(text):
    """3.4's ``normalize`` exactly as the seed prints it, with the pattern ``[^w\\s]``."""
    text = text.lower()
    text = re.sub(r"[^w\s]", "", text)
    tokens = text.split()
    return set(tokens)


def test_s3_4_the_printed_pattern_is_a_typo():
    """3.4 prints ``re.sub(r'[^w\\s]', '', text)``: it deletes every character but "w" and
    whitespace, so the 3.3 example would score 0.0, not the printed 0.923. RankLens uses
    ``[^\\w\\s]`` ("remove punctuation", step 2), which reproduces 0.923."""
    assert seed_normalize_as_printed(GENERATED) == set()
    assert seed_normalize_as_printed("How now, brown cow?") == {"w"}  # "w w w w"
    assert set_tokens("How now, brown cow?") == {"how", "now", "brown", "cow"}
    assert round(set_f1(GENERATED, REFERENCE), 3) == 0.923


def test_s3_4_empty_answers_score_zero():
    """3.4: ``if not gen_tokens or not ref_tokens: return 0.0`` (also both empty)."""
    assert set_f1("", REFERENCE) == 0.0 and set_f1(GENERATED, "") == 0.0 and set_f1("", "") == 0.0
    assert set_f1("?!", "...") == 0.0


def test_s3_5_answer_f1_bands():
    """3.5: 0.80-1.00 Excellent, 0.60-0.79 Good, 0.40-0.59 Moderate, 0.20-0.39 Fair,
    0.00-0.19 Poor; for both answer F1s (exact match has no bands)."""
    assert [(b.label, b.low) for b in BANDS["answer_f1"]] == [
        ("Excellent", 0.80),
        ("Good", 0.60),
        ("Moderate", 0.40),
        ("Fair", 0.20),
        ("Poor", 0.00),
    ]
    values = {0.923: "Excellent", 0.80: "Excellent", 0.795: "Good", 0.60: "Good", 0.59: "Moderate"}
    values |= {0.40: "Moderate", 0.39: "Fair", 0.20: "Fair", 0.19: "Poor", 0.0: "Poor"}
    for value, label in values.items():
        assert band("set_f1", value) == label and band("token_f1", value) == label, value
    assert band_of("set_f1", 0.5).meaning == "Partial overlap with reference"
    assert band("em", 1.0) is None and band("ndcg@10", 0.95) is None


def test_s3_6_answer_f1_results_interpretation():
    """3.6: ~0.05 for every method: "Poor - answers don't match reference"."""
    assert band("set_f1", 0.05) == "Poor"
    assert band_of("set_f1", 0.05).meaning == "Minimal overlap with reference"


# ---------------------------------------------------------------------------------------
# Section 4: summary
# ---------------------------------------------------------------------------------------
def test_s4_2_combined_insights_bands():
    """4.2: Dense 0.30 / 0.33 / 0.05, Sparse 0.44 / 0.47 / 0.05, Hybrid 0.38 / 0.43 / 0.05
    (MRR, Recall@10, Answer F1): Fair, Fair, Poor for each (the 4.1 range 0 to 1, higher
    better, is the bands' domain)."""
    table = pd.DataFrame(
        {
            "method": ["Dense", "Sparse", "Hybrid"],
            "mrr": [0.30, 0.44, 0.38],
            "recall@10": [0.33, 0.47, 0.43],
            "set_f1": [0.05, 0.05, 0.05],
        }
    )
    shown = with_bands(table)
    assert list(shown.columns) == ["method", "mrr", "mrr band", "recall@10", "recall@10 band", "set_f1", "set_f1 band"]
    assert shown[["mrr band", "recall@10 band", "set_f1 band"]].to_numpy().tolist() == [["Fair", "Fair", "Poor"]] * 3


# ---------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------
def cli(*args: str) -> subprocess.CompletedProcess:
    return run_core(args, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_cli_chunk_map_collapses_and_bands(tmp_path):
    """`evaluate --chunk-map` on issue 10's example: 0.5 by default (cut-then-dedup), 1.0
    with --collapse dedup-then-cut; the table shows the bands beside MRR and Recall@10."""
    run = tmp_path / "chunks.trec"
    run.write_text("".join(f"q Q0 a{i} {i + 1} {50 - i} hybrid\n" for i in range(10)) + "q Q0 b0 11 1 hybrid\n")
    cmap = tmp_path / "map.csv"
    cmap.write_text("chunk_id,url\n" + "".join(f"a{i},url_A\n" for i in range(10)) + "b0,url_B\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 url_A 1\nq 0 url_B 1\n")
    base = ["evaluate", "--run", str(run), "--qrels", str(qrels), "--chunk-map", str(cmap), "--metrics"]
    out = cli(*base, "recall@10,mrr", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["aggregate"]["hybrid"] == {"recall@10": 0.5, "mrr": 1.0}
    dedup = cli(*base, "recall@10", "--format", "json", "--collapse", "dedup-then-cut")
    assert json.loads(dedup.stdout)["aggregate"]["hybrid"] == {"recall@10": 1.0}
    table = cli(*base, "mrr@10,recall@10,ndcg@10")
    header, row = table.stdout.splitlines()
    assert header.split() == ["run", "mrr@10", "mrr@10", "band", "recall@10", "recall@10", "band", "ndcg@10"]
    assert row.split()[:6] == ["hybrid", "1.0000", "Excellent", "0.5000", "Moderate", f"{0.6131471927654584:.4f}"]
    # without a chunk map the same file is ranked chunks judged by nothing: the values differ
    plain = cli("evaluate", "--run", str(run), "--qrels", str(qrels), "--metrics", "recall@10", "--format", "csv")
    assert plain.stdout.splitlines()[1] == "hybrid,0.0"
    refused = cli(*base, "ndcg", "--ties", "expected", "--collapse", "dedup-then-cut")
    assert refused.returncode == 0  # one chunk per tied document here: exact
    no_map = cli("evaluate", "--run", str(run), "--qrels", str(qrels), "--collapse", "dedup-then-cut")
    assert no_map.returncode == 2 and no_map.stderr.startswith("error: --collapse needs --chunk-map")


def test_cli_refusal_is_one_line(tmp_path):
    """A policy a collapse cannot give exactly: one line naming the run, query and documents, exit 2."""
    run = tmp_path / "chunks.trec"
    run.write_text("q Q0 a0 1 1 hybrid\nq Q0 a1 2 1 hybrid\nq Q0 a2 3 1 hybrid\nq Q0 b0 4 1 hybrid\n")
    cmap = tmp_path / "map.tsv"
    cmap.write_text("chunk_id\tdoc_id\na0\tA\na1\tA\na2\tA\nb0\tB\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 A 2\nq 0 B 1\n")
    out = cli("evaluate", "--run", str(run), "--qrels", str(qrels), "--chunk-map", str(cmap), "--ties", "pessimistic")
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.splitlines()) == 1
    assert out.stderr.startswith("error: the pessimistic policy with cut-then-dedup is not exact for run 'hybrid'")
    assert "'A' grade 2: 3 chunk(s)" in out.stderr and "'B' grade 1: 1 chunk(s)" in out.stderr


def test_the_seed_file_is_the_one_cited():
    """The numbers above are the seed's: a few of them, read from the file itself."""
    if not SEED.exists():
        pytest.skip("seed file not available")
    text = SEED.read_text(encoding="utf-8")
    for printed in ("= 0.458", "Recall@10 = 1/2 = 0.5", "= 0.923", "0.90 - 1.00\tExcellent", "0.80 - 1.00\tExcellent"):
        assert printed in text, printed
    assert r"re.sub(r'[^w\s]', '', text)" in text
