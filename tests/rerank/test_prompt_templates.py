"""Prompt templates (`core.rerank.templates`, ``--prompt-template``): validation before any call,
the rendered prompt as the server receives it, the reply formats, the cache key and the results."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_openai_server import SECRET, passage_score

from core.__main__ import main as cli_main
from core.rerank import CandidateSet, QueryCandidates, ReplyCache, RerankConfigError, rerank_candidates, rerank_query
from core.rerank.parsing import parse_arrow_ranking, parse_reply
from core.rerank.templates import load_template

ZEPHYR = Path(__file__).resolve().parents[2] / "docs" / "templates" / "rankzephyr.toml"

MINE = '''
system = "You judge {{relevance}}."
rank = """Q={query} N={num}
{passages}
Reply: {format}"""
compare = "Q={query}\\nA: {passage_a}\\nB: {passage_b}\\n{format}"
grade = "Q={query} scale {scale} ({labels})\\nDoc: {passage}\\n{format}"
select = "Q={query} pick {m} of {num}\\n{passages}\\n{format}"
'''


def write(tmp_path, text, name="t.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('rank = "{qeury} {passages}"', "unknown placeholder {qeury}"),
        ('rank = "{query} {passage_a} {passages}"', "unknown placeholder {passage_a}"),
        ('rank = "{query} only"', "missing placeholder {passages}"),
        ('compare = "{query} {passage_a}"', "missing placeholder {passage_b}"),
        ('grade = "{query} {passages}"', "unknown placeholder {passages}"),
        ('ranking = "{query} {passages}"', "unknown key 'ranking'"),
        ('rank = "{query} {passages} {"', "Single '{'"),
        ('rank = "{query!r} {passages}"', "takes no conversion or format spec"),
        ('rank = "{query:>9} {passages}"', "takes no conversion or format spec"),
        ('rank = "{passages[0]} {query}"', "unknown placeholder {passages[0]}"),
        ('rank_reply = "xml"\nrank = "{query} {passages}"', "rank_reply must be 'json' or 'arrows'"),
        ('system = "hi {query}"', "system takes no placeholder"),
        ("rank = 3", "rank must be a string"),
        ("rank = [unclosed", "not TOML"),
        ("# nothing", "no prompt in it"),
    ],
)
def test_validation_names_the_file_and_the_placeholder(tmp_path, text, says):
    path = write(tmp_path, text)
    with pytest.raises(RerankConfigError) as err:
        load_template(path)
    message = str(err.value)
    assert says in message and str(path) in message and "\n" not in message


def test_missing_file():
    with pytest.raises(RerankConfigError, match=r"prompt template /nonexistent/t\.toml: cannot read it"):
        load_template("/nonexistent/t.toml")


def test_the_server_receives_the_rendered_prompts(tmp_path, server, make_provider):
    template = load_template(write(tmp_path, MINE))

    def respond(body):
        user = body["messages"][1]["content"]
        if user.startswith("Q=q N="):
            ps = re.findall(r"^\[\d+\] (.*)$", user, re.M)
            return json.dumps({"ranking": sorted(range(1, len(ps) + 1), key=lambda i: -passage_score(ps[i - 1]))})
        if "\nA: " in user:
            a, b = re.search(r"A: (.*)\nB: (.*)", user).groups()
            return json.dumps({"winner": "A" if passage_score(a) >= passage_score(b) else "B"})
        return json.dumps({"grade": passage_score(re.search(r"Doc: (.*)", user).group(1))})

    server.responder = respond
    ps = ["x score=1", "y score=3", "z score=2"]
    provider = make_provider(prompt_template=template)
    assert rerank_query("rankgpt", "q", ps, provider).order == [1, 2, 0]
    assert rerank_query("prp", "q", ps, provider, passes=2).order == [1, 2, 0]
    assert rerank_query("pointwise", "q", ps, provider).order == [1, 2, 0]
    first = server.requests[0]["body"]
    assert first["messages"][0] == {"role": "system", "content": "You judge {relevance}."}
    assert first["messages"][1]["content"] == (
        "Q=q N=3\n[1] x score=1\n[2] y score=3\n[3] z score=2\n"
        'Reply: {"ranking": [ids]} listing every id from 1 to 3 exactly once, most relevant first, '
        'for example {"ranking": [2, 1, 3]}'
    )
    assert first["response_format"] == {"type": "json_object"}
    pair = server.requests[1]["body"]["messages"][1]["content"]
    assert re.fullmatch(r"Q=q\nA: \w score=\d\nB: \w score=\d\n\{\"winner\": \"A\"\} or .*", pair)
    grade = server.requests[-1]["body"]["messages"][1]["content"]
    assert grade.startswith("Q=q scale 3 (0 = irrelevant, 1 = related") and "\nDoc: " in grade


def test_rankzephyr_template_arrows_through_the_client(server, make_provider):
    template = load_template(ZEPHYR)
    replies = iter(["[2] > [2]", "[2] > [3] > [1]"])  # a repeated id is invalid: re-asked
    server.responder = lambda body: next(replies)
    res = rerank_query("rankgpt", "cats", ["a", "b", "c"], make_provider(prompt_template=template))
    assert res.order == [1, 2, 0] and res.fallbacks == 0
    body = server.requests[0]["body"]
    assert "response_format" not in body  # JSON mode off: the reply is not JSON
    assert body["messages"][0]["content"].startswith("You are RankLLM")
    user = body["messages"][1]["content"]
    assert user.startswith("I will provide you with 3 passages") and "\n[1] a\n[2] b\n[3] c\n" in user
    assert "Search Query: cats." in user
    reask = server.requests[1]["body"]["messages"][-1]["content"]
    assert "appear more than once" in reask and "[id] > [id]" in reask


def test_arrow_parsing():
    assert parse_arrow_ranking(" [3] > [1]>[2] ", 3) == [2, 0, 1]
    assert parse_reply("rank", "<think>x</think>\n[2] > [1]", n=2, rank_reply="arrows") == [1, 0]
    for bad, code in [("[1] > [2] and more", "not_arrows"), ("[1] > [3]", "out_of_range"), ("[1]", "missing_id")]:
        with pytest.raises(Exception) as err:
            parse_arrow_ranking(bad, 2)
        assert err.value.code == code


def test_cache_key_changes_with_the_template(tmp_path, server, make_provider):
    cache = tmp_path / "replies"
    a = write(tmp_path, 'rank = "A {query}\\n{passages}\\n{format}"', "a.toml")
    b = write(tmp_path, 'rank = "A {query}\\n{passages}\\n{format}"\n# a comment: another version', "b.toml")
    ps = ["x score=1", "y score=2"]

    def run(template):
        provider = make_provider(prompt_template=template, cache=ReplyCache(cache))
        return rerank_query("rankgpt", "q", ps, provider).records[0]

    server.responder = lambda body: '{"ranking": [2, 1]}'
    assert not run(load_template(a)).cache_hit
    assert run(load_template(a)).cache_hit  # the same template: served from the cache
    assert not run(load_template(b)).cache_hit  # same prompt text, another file: another version
    assert not run(None).cache_hit
    assert len(server.requests) == 3
    assert load_template(a).digest != load_template(b).digest


def test_prompt_version_in_results_and_cli(tmp_path, server, make_provider, capsys, monkeypatch):
    template = load_template(ZEPHYR)
    server.responder = lambda body: "[2] > [1]"
    cands = CandidateSet((QueryCandidates("1", "q", ("d1", "d2"), ("x", "y")),))
    batch = rerank_candidates(cands, "rankgpt", make_provider(prompt_template=template), concurrency=1)
    assert batch.prompt_version == template.version and batch.run.n_queries == 1
    assert any(template.version in note and str(ZEPHYR) in note for note in batch.notes)
    assert rerank_candidates(cands, "rankgpt", make_provider(), concurrency=1).prompt_version == "default"

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    path = tmp_path / "cands.jsonl"
    path.write_text(
        json.dumps(
            {"qid": "1", "query": "q", "candidates": [{"docid": "d1", "text": "x"}, {"docid": "d2", "text": "y"}]}
        )
        + "\n"
    )
    argv = ["rerank", "--input", str(path), "--strategy", "rankgpt", "--provider", "openai", "--model", "m"]
    argv += ["--base-url", server.base_url, "--no-cache", "--format", "json", "--prompt-template", str(ZEPHYR)]
    capsys.readouterr()
    assert cli_main(argv) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["prompt_version"] == template.version
    assert f"prompts from the template {ZEPHYR}" in out.err


def test_cli_refuses_a_bad_template_before_any_call(tmp_path, server, capsys):
    bad = write(tmp_path, 'rank = "{query} {passage}"')
    path = tmp_path / "cands.jsonl"
    path.write_text(json.dumps({"qid": "1", "query": "q", "candidates": [{"docid": "d1", "text": "x"}]}) + "\n")
    argv = ["rerank", "--input", str(path), "--provider", "openai", "--base-url", server.base_url]
    assert cli_main([*argv, "--prompt-template", str(bad), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "{passage}" in err[0] and str(bad) in err[0]
    assert cli_main([*argv[:3], "--provider", "lexical", "--prompt-template", str(ZEPHYR)]) == 2
    assert "applies to --provider openai" in capsys.readouterr().err
    assert not server.requests
