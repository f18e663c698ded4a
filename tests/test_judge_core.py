"""core.judge's pure pieces (issue 24, votes from LLM judges): pair plans, verdict parsing
(think blocks, malformed replies), swap consistency into ties, position-bias figures, Cohen's
kappa against a hand computation, and the answers reader (errors with file and line; not the
``answers`` kind of the Data page's sniffing)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.errors import DataError
from core.io.judge_answers import read_judge_answers
from core.io.kinds import sniff_kind
from core.judge.agreement import agreement, cohen_kappa, confusion_matrix, label_of
from core.judge.judges import overlap_verdict
from core.judge.pairs import Answer, all_pairs, parse_plan, plan_pairs
from core.judge.parsing import parse_verdict
from core.judge.prompts import PROMPT_VERSION, judge_messages
from core.judge.verdicts import BOTH_BAD, combine, outcome, position_bias
from core.rerank.errors import InvalidOutputError


def _answers() -> list[Answer]:
    out = []
    for q in ("q1", "q2", "q3"):
        for m in ("m3", "m1", "m2", "base"):
            if q == "q3" and m == "base":
                continue  # the baseline skipped q3
            out.append(Answer(q, f"question {q}", m, f"{m} on {q}", "cat" if q != "q2" else ""))
    return out


# ---- pairs ----------------------------------------------------------------------------------
def test_all_pairs_every_unordered_pair_per_question_sorted() -> None:
    pairs = all_pairs(_answers())
    assert len(pairs) == 6 + 6 + 3
    assert [(p.model_a, p.model_b) for p in pairs if p.qid == "q3"] == [("m1", "m2"), ("m1", "m3"), ("m2", "m3")]
    assert all(p.model_a < p.model_b for p in pairs)
    assert pairs[0].answer_a == "base on q1" and pairs[0].category == "cat"


def test_baseline_pairs_every_other_model_with_the_baseline() -> None:
    plan = plan_pairs(_answers(), baseline="base")
    assert [(p.qid, p.model_a, p.model_b) for p in plan.pairs] == [
        (q, "base", m) for q in ("q1", "q2") for m in ("m1", "m2", "m3")
    ]
    assert plan.skipped == {"q3": "base did not answer it"}
    with pytest.raises(DataError, match="baseline 'nobody' answered no question"):
        plan_pairs(_answers(), baseline="nobody")


def test_sample_is_seeded_without_replacement_in_plan_order() -> None:
    every = all_pairs(_answers())
    one = plan_pairs(_answers(), pairs="sample:5", seed=7).pairs
    assert one == plan_pairs(_answers(), pairs="sample:5", seed=7).pairs
    assert len(set(one)) == 5 and all(p in every for p in one)
    assert [every.index(p) for p in one] == sorted(every.index(p) for p in one)
    assert one != plan_pairs(_answers(), pairs="sample:5", seed=8).pairs
    with pytest.raises(DataError, match="more pairs than there are"):
        plan_pairs(_answers(), pairs="sample:99")
    for bad in ("some", "sample:0", "sample:x", "sample"):
        with pytest.raises(DataError, match="cannot read --pairs"):
            parse_plan(bad)
    with pytest.raises(DataError, match="no pair"):
        plan_pairs([Answer("q", "?", "only", "x")])


# ---- prompt and parsing ---------------------------------------------------------------------
def test_prompt_shows_both_answers_in_order_and_is_versioned() -> None:
    messages = judge_messages("Why?", "first text", "second text")
    user = messages[-1]["content"]
    assert user.index("first text") < user.index("second text")
    assert "[[A]]" in user and "[[C]]" in user and "[[D]]" in user
    assert PROMPT_VERSION.startswith("ranklens-pairwise-v")


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("A is more precise.\n[[A]]", "A"),
        ("[[ b ]]", "B"),
        ("Equal.\n\n[[C]]", "C"),
        ("Both wrong. [[D]]", "D"),
        ("<think>maybe [[A]]... no, [[B]]</think>Final: [[B]]", "B"),
        ("  <think>\n[[A]]\n</think>\n[[C]]", "C"),
        ("[[A]] I said [[A]]", "A"),
    ],
)
def test_parse_verdict(reply: str, label: str) -> None:
    assert parse_verdict(reply) == label


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("", "empty"),
        ("I prefer the first one.", "no_verdict"),
        ("[[A]] or maybe [[B]]", "several_verdicts"),
        ("<think>[[A]] is best", "unclosed_think"),  # cut inside the reasoning
        ("<think>[[A]]</think>  ", "only_reasoning"),
        ("[A]", "no_verdict"),
    ],
)
def test_malformed_verdicts_are_invalid_output(reply: str, code: str) -> None:
    with pytest.raises(InvalidOutputError) as info:
        parse_verdict(reply)
    assert info.value.code == code


# ---- verdicts: swap consistency and position bias -------------------------------------------
def test_outcome_follows_the_position() -> None:
    assert outcome("A", swapped=False) == "model_a" and outcome("A", swapped=True) == "model_b"
    assert outcome("B", swapped=False) == "model_b" and outcome("B", swapped=True) == "model_a"
    assert outcome("C", swapped=True) == "tie" and outcome("D", swapped=False) == BOTH_BAD


@pytest.mark.parametrize(
    ("first", "second", "winner", "consistent"),
    [
        ("A", "B", "model_a", True),  # model_a won in both orders
        ("B", "A", "model_b", True),
        ("A", "A", "tie", False),  # the first position won twice: inconsistent -> tie
        ("B", "B", "tie", False),
        ("C", "C", "tie", True),
        ("D", "D", BOTH_BAD, True),
        ("A", "C", "tie", False),
        ("D", "C", "tie", False),
    ],
)
def test_combine(first: str, second: str, winner: str, consistent: bool) -> None:
    c = combine(first, second)
    assert (c.winner, c.consistent) == (winner, consistent)


def test_position_bias_figures() -> None:
    bias = position_bias([("A", "A"), ("A", "B"), ("B", "A"), ("C", "A"), ("D", "D")])
    # decisive: A,A,A,B,B,A,A = 7; first-position wins (label A): 5
    assert (bias.pairs, bias.decisive, bias.first_wins, bias.consistent) == (5, 7, 5, 3)
    assert bias.first_share == pytest.approx(5 / 7) and bias.consistency == pytest.approx(3 / 5)
    from scipy.stats import binomtest

    assert bias.p_value() == pytest.approx(binomtest(5, 7, 0.5).pvalue)
    assert "5 of 7" in bias.text() and "3 of 5" in bias.text()
    empty = position_bias([])
    assert empty.first_share is None and empty.consistency is None and empty.p_value() is None


def test_offline_judge_prefers_overlap_and_is_consistent() -> None:
    q = "capital of France"
    assert overlap_verdict(q, "The capital of France is Paris", "Paris") == "A"
    assert overlap_verdict(q, "Paris", "The capital of France is Paris") == "B"
    assert overlap_verdict(q, "France", "capital") == "C"
    assert overlap_verdict(q, "Paris", "Lyon") == "D"
    first, second = overlap_verdict(q, "France x", "y"), overlap_verdict(q, "y", "France x")
    assert combine(first, second).consistent


# ---- agreement and kappa --------------------------------------------------------------------
def test_kappa_by_hand() -> None:
    # rows judge, columns human (model_a, model_b, tie)
    m = np.array([[20, 5, 3], [4, 15, 2], [1, 2, 8]])
    n = 60
    p_o = (20 + 15 + 8) / n
    rows, cols = [28, 21, 11], [25, 22, 13]
    p_e = sum(r * c for r, c in zip(rows, cols, strict=True)) / n**2
    assert cohen_kappa(m) == pytest.approx((p_o - p_e) / (1 - p_e))
    assert cohen_kappa(np.zeros((3, 3))) is None
    assert cohen_kappa(np.array([[4, 0, 0], [0, 0, 0], [0, 0, 0]])) is None  # chance agreement 1
    assert cohen_kappa(np.diag([3, 2, 1])) == pytest.approx(1.0)


def test_agreement_aligns_orientation_and_counts_every_human_vote() -> None:
    judge = [
        ("q1", "x", "y", "model_a"),
        ("q2", "x", "y", "tie"),
        ("q3", "x", "z", "model_b"),
        ("q4", "y", "z", BOTH_BAD),
    ]
    human = [
        ("q1", "y", "x", "model_b"),  # flipped: x won -> model_a in the judge's orientation: agree
        ("q1", "x", "y", "model_b"),  # disagree
        ("q2", "y", "x", "tie"),  # agree
        ("q3", "x", "z", "model_b"),  # agree
        ("q4", "z", "y", "tie (bothbad)"),  # tie == tie: agree
        ("q9", "x", "y", "model_a"),  # no judge vote
    ]
    got = agreement(judge, human)
    assert (got.n, got.agree, got.unmatched) == (5, 4, 1) and got.rate == pytest.approx(0.8)
    expected = confusion_matrix(
        [("model_a", "model_a"), ("model_a", "model_b"), ("tie", "tie"), ("model_b", "model_b"), ("tie", "tie")]
    )
    assert got.confusion == tuple(tuple(int(v) for v in r) for r in expected)
    assert got.kappa == pytest.approx(cohen_kappa(expected))
    assert "4 of 5" in got.text() and "judge \\ human" in got.text()
    assert label_of("Tie (BothBad)") == "tie"


# ---- the answers reader ---------------------------------------------------------------------
def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


GOOD = [
    {"qid": "q1", "question": "Why?", "model": "a", "answer": "Because.", "category": "c"},
    {"qid": 1, "question": "How?", "model": "b", "answer": "So."},
]


def test_reader_jsonl_csv_parquet_agree(tmp_path) -> None:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "a.jsonl").write_text(_jsonl(GOOD))
    frame = pd.DataFrame([{**r, "qid": str(r["qid"]), "category": r.get("category", "")} for r in GOOD])
    frame.loc[0, "answer"] = "Because,\nreally."
    frame.to_csv(tmp_path / "a.csv", index=False)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "a.parquet")
    from_jsonl = read_judge_answers(tmp_path / "a.jsonl")
    assert from_jsonl == [Answer("q1", "Why?", "a", "Because.", "c"), Answer("1", "How?", "b", "So.", "")]
    for name in ("a.csv", "a.parquet"):
        got = read_judge_answers(tmp_path / name)
        assert got[0].answer == "Because,\nreally." and got[1] == from_jsonl[1]


@pytest.mark.parametrize(
    ("rows", "line", "what"),
    [
        ([GOOD[0], {"qid": "q2", "question": "x", "model": "a"}], 2, "missing answer"),
        ([GOOD[0], {**GOOD[0], "answer": "again"}], 2, "answers qid 'q1' twice"),
        ([GOOD[0], {**GOOD[0], "model": "b", "question": "Other?"}], 2, "different question"),
        ([{**GOOD[0], "model": None}], 1, "missing model"),
        ([{**GOOD[0], "answer": ["x"]}], 1, "answer"),
        ([{**GOOD[0], "qid": "q\x1b1"}], 1, "control character"),
        ([GOOD[1], {**GOOD[0], "category": "a\tb"}], 2, "category 'a\\tb' contains a control character"),
    ],
)
def test_reader_errors_name_file_and_line(tmp_path, rows, line, what) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(_jsonl(rows))
    with pytest.raises(DataError) as info:
        read_judge_answers(path)
    assert info.value.line == line and what in str(info.value) and "bad.jsonl" in str(info.value)


def test_reader_parquet_errors_name_the_row(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{k: str(v) for k, v in r.items()} for r in (GOOD[0], GOOD[0])]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "dup.parquet")
    with pytest.raises(DataError, match=r"dup.parquet, row 2: .*twice \(first on row 1\)"):
        read_judge_answers(tmp_path / "dup.parquet")


def test_reader_csv_errors_name_the_record_start(tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text('qid,question,model,answer\nq1,Why?,a,"two\nlines"\nq1,Why?,a,dup\n')
    with pytest.raises(DataError, match=r"bad.csv, line 4: .*twice"):
        read_judge_answers(path)
    path.write_text("qid,question,answer\nq1,Why?,x\n")
    with pytest.raises(DataError, match=r"line 1: the header lacks model"):
        read_judge_answers(path)
    path.write_text("{not json\n")
    with pytest.raises(DataError, match="line 1"):
        read_judge_answers(path, fmt="jsonl")


def test_not_taken_for_the_answers_kind(tmp_path) -> None:
    data = _jsonl(GOOD).encode()
    with pytest.raises(DataError, match="fits no dataset kind"):
        sniff_kind(data, "answers.jsonl")  # never 'answers' (qid, prediction, reference)
    csv_data = b"qid,question,model,answer\nq1,Why?,a,x\n"
    with pytest.raises(DataError, match="fits no dataset kind"):
        sniff_kind(csv_data, "answers.csv")
