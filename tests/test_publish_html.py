"""The HTML report (issue 25, "A report to send"): core.publish.html and ``python -m core report``.

The document parses, fetches nothing (no ``src``/``href`` to another host, no ``@import`` or
``url(...)``, no script), keeps hostile run and model names as text, holds each section when its
inputs are given (and only then), prints on A4; the command writes it through the output guard
(atomically, never over an input, over another file only with ``--force``)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import core
from core.__main__ import main
from core.intervals import IntervalSpec
from core.io import read_qrels, read_runs, read_votes
from core.publish import html as report
from core.workspace.file import dataset_digest

HOSTILE_RUN = "<script>alert(1)</script>"
HOSTILE_MODEL = "<img src=x onerror=alert(2)>"
PERMUTATIONS = 500  # the tests' randomisation tests: enough to decide, fast


def _qrels_text(n: int = 12) -> str:
    return "".join(f"q{q} 0 d{q}-{d} {1 if d in (0, 3) else 0}\n" for q in range(n) for d in range(6))


def _run_text(tag: str, shift: int, n: int = 12) -> str:
    """Six documents per query, pairs of them tied, the relevant ones placed by ``shift``."""
    lines = []
    for q in range(n):
        order = [(d + shift + q) % 6 for d in range(6)]
        for rank, d in enumerate(order, 1):
            lines.append(f"q{q} Q0 d{q}-{d} {rank} {10 - (rank - 1) // 2} {tag}\n")
    return "".join(lines)


def _votes_text(models: list[str], n: int = 120, seed: int = 3) -> str:
    rng = np.random.default_rng(seed)
    rows = ["model_a,model_b,winner"]
    strength = {m: i for i, m in enumerate(models)}
    for _ in range(n):
        a, b = rng.choice(len(models), 2, replace=False)
        ma, mb = models[a], models[b]
        p = 1 / (1 + np.exp(strength[mb] - strength[ma]))
        u = rng.uniform()
        rows.append(f'"{ma}","{mb}",{"tie" if abs(u - p) < 0.05 else ("model_a" if u < p else "model_b")}')
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("report-inputs")
    paths = {
        "qrels": folder / "qrels.txt",
        "a": folder / "a.trec",
        "b": folder / "b.trec",
        "votes": folder / "votes.csv",
    }
    paths["qrels"].write_text(_qrels_text())
    paths["a"].write_text(_run_text("bm25", 0))
    paths["b"].write_text(_run_text(HOSTILE_RUN, 3))
    paths["votes"].write_text(_votes_text(["alpha", "beta", HOSTILE_MODEL, "gamma & co"]))
    return paths


@pytest.fixture(scope="module")
def data(files):
    runs = [*read_runs(files["a"]), *read_runs(files["b"])]
    return runs, read_qrels(files["qrels"]), read_votes(files["votes"])


@pytest.fixture(scope="module")
def full(data) -> str:
    runs, qrels, votes = data
    return report.report_html(
        runs,
        qrels,
        "mrr@10,ndcg@10",
        votes=votes,
        ci=IntervalSpec("t"),
        baseline="bm25",
        n_permutations=PERMUTATIONS,
        created="2025-01-01T00:00:00+00:00",
    )


class Document(HTMLParser):
    """Every start tag with its attributes, the text of ``<style>`` and the text outside tags."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._in_style = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        (self.styles if self._in_style else self.text).append(data)

    def names(self) -> list[str]:
        return [t for t, _ in self.tags]

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if a.get("id")}


#: attributes that make a browser fetch (or navigate to) what they name
FETCHING = {"src", "href", "xlink:href", "srcset", "action", "formaction", "data", "poster", "background", "ping"}


def external_references(text: str) -> list[str]:
    """Every reference of the document to something off the file: a fetching attribute naming
    a URL with a scheme or ``//``, ``@import`` or ``url(...)`` in a style, a ``<link>``,
    ``<script>``, ``<iframe>``, ``<object>``, ``<embed>`` or ``<base>``; plain text mentioning a
    URL is not one."""
    doc = Document(text)
    found = []
    for tag, attrs in doc.tags:
        if tag in ("link", "script", "iframe", "object", "embed", "base", "img", "image", "use", "audio", "video"):
            found.append(f"<{tag}>")
        for name, value in attrs.items():
            if name in FETCHING and value and re.match(r"\s*([a-z][a-z0-9+.-]*:|//)", value, re.I):
                found.append(f"{name}={value}")
            if name == "style" and value and re.search(r"url\(|@import", value, re.I):
                found.append(f"style={value}")
    found += ["style sheet fetches" for style in doc.styles if re.search(r"url\(|@import|@font-face", style, re.I)]
    return found


def test_the_report_parses_and_holds_every_section(full, data):
    runs, qrels, votes = data
    doc = Document(full)
    assert full.startswith(f"{report.DOCTYPE}\n{report.MARK}\n")
    assert {"tie-story", "summary", "significance", "leaderboard", "datasets", "settings"} <= doc.ids()
    assert doc.names().count("svg") == 2  # the tie story and the board's interval plot
    text = " ".join(doc.text)
    assert "the range ties allow" in text  # the figure's title
    assert "change order between traditional and tie-aware" in text or "keep the same order" in text  # Home's sentence
    assert "The top difference on mrr@10" in text  # Home's second sentence
    assert "95% t intervals of the mean over queries" in text and "CI low" in text and "tier" in text
    assert "Every pair of runs" in text and "Against the baseline bm25" in text and "robust to ties" in text
    assert "Bradley-Terry ratings with 95% sandwich (robust) intervals" in text
    for obj in (qrels, *runs, votes):
        assert dataset_digest(obj.table) in text
    assert f"RankLens {core.__version__}" in text and "2025-01-01T00:00:00+00:00" in text
    settings = full.split('id="settings"', 1)[1]
    assert "mrr@10, ndcg@10" in settings and "trec_eval (trec)" in settings and "bm25" in settings


def test_nothing_is_fetched_or_run(full):
    assert external_references(full) == []
    assert "<script" not in full.lower().replace("&lt;script", "")
    # the browser is told so too: no source at all but inline styles
    csp = [a for t, a in Document(full).tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in (csp[0]["content"] or "")


def test_the_checker_finds_what_it_should():
    """`external_references` itself: each kind of reference is caught, text and namespaces are not."""
    assert external_references('<p>see https://example.org</p><svg xmlns="http://www.w3.org/2000/svg"></svg>') == []
    for bad in (
        '<img src="http://x/a.png">',
        '<a href="https://x">x</a>',
        "<style>@import 'https://x/a.css';</style>",
        "<style>body{background:url(//x/a.png)}</style>",
        '<div style="background:url(http://x)"></div>',
        '<link rel="stylesheet" href="a.css">',
        '<svg><image href="http://x/a.png"/></svg>',
    ):
        assert external_references(bad), bad


def test_hostile_names_stay_text(full):
    doc = Document(full)
    assert HOSTILE_RUN not in full and HOSTILE_MODEL not in full
    assert "script" not in doc.names() and "img" not in doc.names()
    assert not any(name.startswith("on") for _, attrs in doc.tags for name in attrs)
    text = " ".join(doc.text)
    assert HOSTILE_RUN in text and HOSTILE_MODEL in text  # shown, as text
    assert "gamma &amp; co" in full


def test_sections_follow_the_inputs(data):
    runs, qrels, votes = data
    metrics_only = Document(report.report_html(runs[:1], qrels, "mrr@10", n_permutations=PERMUTATIONS))
    assert {"tie-story", "summary", "significance", "datasets", "settings"} <= metrics_only.ids()
    assert "leaderboard" not in metrics_only.ids()
    text = " ".join(metrics_only.text)
    assert "Every pair of runs" not in text and "only bm25 is in this report" in text
    assert "CI low" not in text and "Against the baseline" not in text
    board_only = Document(report.report_html(votes=votes))
    assert {"leaderboard", "datasets", "settings"} <= board_only.ids()
    assert not {"tie-story", "summary", "significance"} & board_only.ids()
    with pytest.raises(core.errors.MetricError, match="nothing to report"):
        report.build_report()
    with pytest.raises(core.errors.MetricError, match="unknown baseline"):
        report.build_report(runs, qrels, "mrr@10", baseline="nope", n_permutations=PERMUTATIONS)


def test_a_long_board_is_drawn_in_parts_on_one_axis(data, monkeypatch):
    _, _, votes = data
    monkeypatch.setattr(report, "BOARD_ROWS", 3)
    doc = Document(report.report_html(votes=votes))
    boards = [a for t, a in doc.tags if t == "figure" and a.get("class") == "board"]
    assert len(boards) == 2  # 4 models, 3 a part
    text = " ".join(doc.text)
    assert "(1/2)" in text and "(2/2)" in text


def test_it_prints_on_a4_without_cut_figures(full):
    css = " ".join(Document(full).styles)
    assert re.search(r"@page\s*\{[^}]*size:\s*A4", css)
    assert re.search(r"figure\s*\{[^}]*break-inside:\s*avoid", css)
    assert re.search(r"figure svg\s*\{[^}]*max-width:\s*100%", css)
    assert "height: auto !important" in css  # a fixed-height SVG scales with its width


# ---- the command ------------------------------------------------------------------------------
def _args(files, out: Path, *extra: str) -> list[str]:
    return [
        "report",
        "--run",
        str(files["a"]),
        "--run",
        str(files["b"]),
        "--qrels",
        str(files["qrels"]),
        "--metrics",
        "mrr@10",
        "-o",
        str(out),
        *extra,
    ]


def test_the_command_writes_the_report_atomically(files, tmp_path, monkeypatch):
    from core.io import outputs

    written = []
    real = outputs.write_text

    def spy(path, text, **kwargs):
        written.append(str(path))
        return real(path, text, **kwargs)

    monkeypatch.setattr(outputs, "write_text", spy)
    out = tmp_path / "report.html"
    assert main(_args(files, out, "--votes", str(files["votes"]), "--ci", "t", "--baseline", "bm25")) == 0
    assert written == [str(out)]
    html = out.read_text(encoding="utf-8")
    assert html.startswith(f"{report.DOCTYPE}\n{report.MARK}") and external_references(html) == []
    assert {"tie-story", "leaderboard", "significance"} <= Document(html).ids()
    assert main(_args(files, out)) == 0  # an earlier report is replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temporary left


def test_the_command_never_writes_an_input_and_keeps_other_files(files, tmp_path, capsys):
    before = files["a"].read_bytes()
    assert main(_args(files, files["a"])) == 2
    assert files["a"].read_bytes() == before
    assert "is an input of this command" in capsys.readouterr().err
    other = tmp_path / "notes.html"
    other.write_text("<p>my notes</p>")
    assert main(_args(files, other)) == 2
    assert other.read_text() == "<p>my notes</p>"
    assert "pass --force" in capsys.readouterr().err
    assert main(_args(files, other, "--force")) == 0
    assert other.read_text().startswith(report.DOCTYPE)


def test_the_command_reads_a_workspace_and_refuses_half_inputs(files, tmp_path, capsys):
    ws = tmp_path / "ws.ranklens.zip"
    assert (
        main(
            [
                "workspace",
                "save",
                str(ws),
                "--run",
                str(files["a"]),
                "--qrels",
                str(files["qrels"]),
                "--votes",
                str(files["votes"]),
            ]
        )
        == 0
    )
    out = tmp_path / "ws.html"
    assert main(["report", "--workspace", str(ws), "--metrics", "mrr@10", "-o", str(out)]) == 0
    doc = Document(out.read_text(encoding="utf-8"))
    assert {"tie-story", "leaderboard"} <= doc.ids()
    capsys.readouterr()
    assert main(["report", "--run", str(files["a"]), "-o", str(tmp_path / "x.html")]) == 2
    assert "--run and --qrels go together" in capsys.readouterr().err
    assert main(["report", "--workspace", str(ws), "-o", str(ws)]) == 2  # the workspace is an input too
