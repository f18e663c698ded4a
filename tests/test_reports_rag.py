"""core.reports.rag: the RAG page's tables and sentences (issue 23), against core.rag's own values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.rag.data import RagItem, RagQuestion, RagSet
from core.rag.evaluate import Correlation, evaluate_rag, evidence_gaps, retrieval_answer_correlation
from core.rag.judges import RagJudgement, RagJudgeRun, estimate
from core.reports import rag as reports


def small_set() -> RagSet:
    """Three questions: q1 finds its evidence and answers wrongly, q2 misses it and answers right,
    q3 ties its relevant chunk with an irrelevant one across k = 1; hostile text in a question."""
    return RagSet(
        "small",
        (
            RagQuestion(
                "q1",
                "Where is **Paris**? <b>x</b>",
                (RagItem("a", "d1", 0.9, "Paris is in France."), RagItem("b", "d2", 0.5, "Other.")),
                "Rome.",
                ("France",),
                {"a": 1},
            ),
            RagQuestion(
                "q2",
                "Who wrote Hamlet?",
                (RagItem("c", "d3", 0.9, "Tea."), RagItem("e", "d4", 0.8, None)),
                "Shakespeare",
                ("Shakespeare",),
                {"z": 1},
            ),
            RagQuestion(
                "q3",
                "Gold?",
                (RagItem("f", "d5", 0.7, "Other."), RagItem("g", "d6", 0.7, "Au is gold.")),
                "Au",
                ("Au",),
                {"g": 2},
            ),
        ),
    )


def test_aggregate_table_holds_every_policy_mean_and_the_range() -> None:
    rs = small_set()
    ev = evaluate_rag(rs, k=1)
    table = reports.aggregate_table(ev)
    assert list(table.columns) == list(reports.AGGREGATE_COLUMNS)
    assert list(table["metric"]) == list(ev.names)
    row = table.set_index("metric").loc["context_recall@1"]
    # q1 1, q2 0, q3 the tie at k = 1: 0 in the file's order, 1/2 expected, 0..1
    assert row["traditional"] == pytest.approx(1 / 3)
    assert row["tie-aware"] == pytest.approx(0.5)
    assert row["pessimistic"] == pytest.approx(1 / 3) and row["optimistic"] == pytest.approx(2 / 3)
    assert row["range"] == pytest.approx(1 / 3) and row["Δ"] == pytest.approx(0.5 - 1 / 3)
    assert row["stage"] == "context" and row["questions"] == 3
    f1 = table.set_index("metric").loc["token_f1"]
    assert f1["range"] == 0 and f1["stage"] == "answer" and f1["traditional"] == ev.mean("token_f1")


def test_per_question_table_follows_the_policy_and_names_the_gaps() -> None:
    rs = small_set()
    ev = evaluate_rag(rs, k=1)
    gaps = evidence_gaps(ev, "context_recall@1", "token_f1")
    assert gaps.found_but_missed == ("q1",) and gaps.missed_but_right == ("q2", "q3")  # q3: tie, file order
    best_gaps = evidence_gaps(ev, "context_recall@1", "token_f1", policy="optimistic")
    assert best_gaps.missed_but_right == ("q2",)
    trad = reports.per_question_table(rs, ev, "traditional", gaps)
    best = reports.per_question_table(rs, ev, "optimistic", gaps)
    assert list(trad["qid"]) == ["q1", "q2", "q3"]
    assert trad["question"][0] == "Where is **Paris**? <b>x</b>"  # the text as written, shown as text
    assert list(trad["context_recall@1"]) == [1.0, 0.0, 0.0] and list(best["context_recall@1"]) == [1.0, 0.0, 1.0]
    assert list(trad["tie at k"]) == [False, False, True]
    assert list(trad["gap"]) == [reports.FOUND_BUT_MISSED, reports.MISSED_BUT_RIGHT, reports.MISSED_BUT_RIGHT]
    assert list(reports.per_question_table(rs, ev, "optimistic", best_gaps)["gap"])[2] == ""
    np.testing.assert_array_equal(trad["token_f1"].to_numpy(), ev.column("token_f1"))
    found = reports.gap_table(rs, ev, gaps, reports.FOUND_BUT_MISSED)
    assert found.to_dict("records") == [
        {
            "qid": "q1",
            "question": "Where is **Paris**? <b>x</b>",
            "context_recall@1": 1.0,
            "token_f1": 0.0,
            "answer": "Rome.",
            "reference": "France",
        }
    ]
    assert "1 found the evidence but the answer missed it, 2 answered right" in reports.gap_sentence(gaps)


def test_scatter_frame_leaves_out_questions_without_both_values() -> None:
    rs = small_set()
    qs = list(rs.questions)
    qs[1] = RagQuestion("q2", "No reference", qs[1].retrieved, "x", (), {"z": 1})
    rs = RagSet("s", tuple(qs))
    ev = evaluate_rag(rs, k=1)
    points = reports.scatter_frame(rs, ev, "context_recall@1", "token_f1", "expected")
    assert list(points["qid"]) == ["q1", "q3"] and list(points["retrieval"]) == [1.0, 0.5]
    corr = retrieval_answer_correlation(ev, "context_recall@1", "token_f1")
    assert corr.n == 2 == len(points)
    retrieval, answer = reports.metric_choices(ev)
    assert retrieval[0] == "context_recall@1" and answer[0] == "token_f1"


def test_correlation_sentences() -> None:
    strong = Correlation("context_recall@10", "token_f1", "expected", 30, 0.61, 0.55)
    text = reports.correlation_sentence(strong)
    assert "Pearson r = 0.610, Spearman ρ = 0.550, n = 30 questions" in text
    assert "a strong positive link (better retrieval goes with better answers here)" in text
    assert "tie-aware (expected)" in text
    none = reports.correlation_sentence(Correlation("r", "a", "traditional", 30, 0.02, -0.05))
    assert "no monotone link" in none
    few = reports.correlation_sentence(Correlation("r", "a", "traditional", 2, math.nan, math.nan))
    assert "undefined (fewer than 3 questions hold both values)" in few
    flat = reports.correlation_sentence(Correlation("r", "a", "traditional", 9, math.nan, math.nan))
    assert "one of the two is constant" in flat
    assert reports.strength(-0.4) == "a moderate" and reports.strength(0.2) == "a weak"


def test_offline_note_and_estimates_say_what_a_judge_adds() -> None:
    rs = small_set()
    note = reports.offline_note(rs, 10)
    assert note.startswith("Every metric above is computed without an LLM.")
    assert "faithfulness" in note and "answer correctness" in note and "context relevance" in note
    assert "3 of 3 questions have texts" in note and "3 of 3 questions have a reference" in note
    est = estimate(rs.questions, k=10)
    live = reports.estimate_sentence(est, 3)
    assert live.startswith(est.calls_text()) and "for 3 questions" in live and "$" in live
    assert "no model is called" in reports.estimate_sentence(est, 3, recorded=True)


def _run(results: list[RagJudgement]) -> RagJudgeRun:
    return RagJudgeRun(tuple(results), (), "judge-1", False, ("faithfulness", "answer_correctness"), 10, 0.1)


def test_judge_tables_and_the_judged_qrels() -> None:
    rs = small_set()
    run = _run(
        [
            RagJudgement("q1", 1.0, 0.0, 2 / 3, grades={"a": 3, "b": 0}),
            RagJudgement("q2", 0.0, 1.0, None, grades={"c": 1}, failed="rag-grade: timeout"),
            RagJudgement("q3", 1.0, 1.0, 1.0, grades={"f": 0, "g": 3}),
        ]
    )
    ev = evaluate_rag(rs, k=1, judged=run.by_qid())
    summary = reports.judge_summary(ev).set_index("measure")
    assert summary.loc["answer_correctness", "mean"] == pytest.approx(2 / 3)
    assert summary.loc["context_relevance", "questions"] == 2
    # answers judged correct: q2 and q3; their token F1 1 and 1
    assert summary.loc["token_f1", "mean on answers judged correct"] == pytest.approx(1.0)
    assert summary.loc["faithfulness", "by"] == "LLM judge" and summary.loc["token_f1", "by"] == "token overlap"
    assert "The judge rates 2 answers correct" in (reports.judge_point(ev) or "")
    vs = reports.judge_vs_f1_table(rs, ev)
    assert list(vs.columns) == [
        "qid",
        "question",
        "token_f1",
        "set_f1",
        "answer_correctness",
        "faithfulness",
        "context_relevance",
    ]
    assert reports.failed_table(run).to_dict("records") == [{"qid": "q2", "reason": "rag-grade: timeout"}]
    lines = reports.judged_qrels(run).splitlines()
    assert lines == [
        "q1 llm:ranklens-rag-v1 a 3",
        "q1 llm:ranklens-rag-v1 b 0",
        "q2 llm:ranklens-rag-v1 c 1",
        "q3 llm:ranklens-rag-v1 f 0",
        "q3 llm:ranklens-rag-v1 g 3",
    ]
    from core.io import read_qrels

    qrels = read_qrels("\n".join(lines).encode() + b"\n", filename="judged.txt")
    assert qrels.to_dict() == {"q1": {"a": 3, "b": 0}, "q2": {"c": 1}, "q3": {"f": 0, "g": 3}}


def test_the_demo_with_its_recorded_judge_shows_the_seeds_point() -> None:
    """Answers the judge rates correct score token F1 near 0.05 (median) on the demo."""
    from core.demo.rag import generate
    from core.demo.rag_judge import recorded_provider
    from core.rag.judges import RagJudge, judge_rag

    rs = generate()
    run = judge_rag(list(rs.questions), RagJudge(recorded_provider()), k=10)
    ev = evaluate_rag(rs, k=10, judged=run.by_qid())
    ac, f1 = ev.column("answer_correctness"), ev.column("token_f1")
    correct = ac >= reports.CORRECT_AT
    assert correct.sum() >= 20 and float(np.median(f1[correct])) < 0.1
    point = reports.judge_point(ev) or ""
    assert f"median {float(np.median(f1[correct])):.3f}" in point


def test_agreement_of_the_judge_with_the_files_labels() -> None:
    rs = small_set()
    run = _run(
        [
            RagJudgement("q1", grades={"a": 1, "b": 0}),  # labels: a 1, b 0 -> both agree
            RagJudgement("q2", grades={"c": 2}),  # label 0 -> disagree
            RagJudgement("q3", grades={"f": 0, "g": 2}),  # labels: f 0, g 2 -> both agree
        ]
    )
    a = reports.agreement(rs, run)
    assert a is not None and (a.n, a.agree) == (5, 4)
    text = reports.agreement_sentence(a)
    assert text.startswith("The judge and the file's relevant labels") and "agree on 4 of 5 passages (80.0%)" in text
    table = reports.confusion_table(a)
    assert list(table.columns) == ["judge", "label 0", "label 1", "label 2", "label 3"]
    assert table.set_index("judge").loc["judge 2", "label 0"] == 1 and int(table.iloc[:, 1:].to_numpy().sum()) == 5
    unlabelled = RagSet(
        "u", tuple(RagQuestion(q.qid, q.question, q.retrieved, q.answer, q.references, None) for q in rs.questions)
    )
    assert reports.agreement(unlabelled, run) is None
