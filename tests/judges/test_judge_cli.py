"""`chateval judge pairwise` and `chateval judge report` end to end: the real client over real HTTP to the local
OpenAI-compatible server, whose responder plays a judge with a known position bias, length bias, noise and some
unreadable answers (decided by a seeded hash of what it is shown, so concurrency cannot change it). Every row's
outcome is checked against the responder's own two decisions, combined by hand here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evaluation.llm.server import LocalChatServer

from .helpers import shown_responses

SEED = "judge-cli-7"
QUALITY = {"alpha": 3, "beta": 2, "gamma": 1}


def unit(*parts: str) -> float:
    """A number in [0, 1) fixed by the parts and the seed."""
    digest = hashlib.sha256("|".join((SEED, *parts)).encode()).hexdigest()
    return int(digest[:12], 16) / 16**12


def decide(first: str, second: str) -> str:
    """The simulated judge's answer when shown `first` as Response A and `second` as Response B."""
    if unit("unreadable", first, second) < 0.04:
        return "Hard to say, both have merit."
    if unit("position", first, second) < 0.15:
        return "The first one reads well.\n[[A]]"
    if unit("length", first, second) < 0.25 and len(first.split()) != len(second.split()):
        return "More detail.\n[[A]]" if len(first.split()) > len(second.split()) else "More detail.\n[[B]]"
    if unit("noise", first, second) < 0.1:
        return "[[tie]]"
    qa, qb = (int(text.split()[0][1:]) for text in (first, second))
    return "[[A]]" if qa > qb else "[[B]]" if qb > qa else "[[tie]]"


def responder(request: dict) -> str:
    return decide(*shown_responses(request["messages"]))


def expected_outcome(response_a: str, response_b: str) -> str | None:
    """Both orders, mapped to system terms and combined: what the row must say (None: ungraded)."""
    verdicts = []
    for first, second, flip in ((response_a, response_b, False), (response_b, response_a, True)):
        answer = decide(first, second)
        verdict = next((v for v in ("A", "B", "tie") if f"[[{v}]]" in answer), None)
        if verdict is None:
            return None
        verdicts.append({"A": "B", "B": "A"}.get(verdict, verdict) if flip else verdict)
    return verdicts[0] if verdicts[0] == verdicts[1] else "tie"


@pytest.fixture
def response_files(tmp_path: Path, hub_open) -> dict[str, Path]:
    files = {}
    for name, quality in QUALITY.items():
        lines = []
        for i, prompt in enumerate(hub_open.prompts):
            words = 2 + int(unit("length-of", name, prompt.id) * 12)
            lines.append(f"q{quality} {name} says " + " ".join(f"w{i}" for _ in range(words)))
        if name == "gamma":
            lines[0] = files_line_zero = lines[0].replace("q1 gamma", "q2 beta")  # identical to beta on prompt 0
        path = tmp_path / f"{name}.txt"
        path.write_text("\n".join(lines) + "\n")
        files[name] = path
    beta = files["beta"].read_text().splitlines()
    beta[0] = files_line_zero
    files["beta"].write_text("\n".join(beta) + "\n")
    return files


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


@pytest.fixture
def server():
    with LocalChatServer(responder=responder) as running:
        yield running


def test_pairwise_over_a_whole_dataset(run_cli, server, response_files, tmp_path, hub_open):
    out = tmp_path / "judge.jsonl"
    args = ["judge", "pairwise", "--dataset", "hub-open-v1", "--endpoint", server.base_url, "--model", "sim-judge"]
    for name, path in response_files.items():
        args += ["--responses", f"{name}#{10 + QUALITY[name]}={path}"]  # hub systems: NAME#ID
    args += ["--out", out]
    result = run_cli(*args)
    assert result.exit_code == 0, result.stderr
    rows = rows_of(out)
    assert len(rows) == 3 * 120
    assert {(r["system_a"], r["system_b"]) for r in rows} == {("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")}
    assert {(r["system_a_id"], r["system_b_id"]) for r in rows} == {(13, 12), (13, 11), (12, 11)}
    auto = [r for r in rows if r["auto_tie"]]
    assert [(r["system_a"], r["system_b"], r["prompt_id"]) for r in auto] == [("beta", "gamma", "hov1-001")]
    # both orders of every pair but the identical one; alpha's pairs with beta and gamma on prompt 0 are the same
    # conversations (gamma's response there is beta's), which the call cache answers once
    assert server.requests == 2 * (3 * 120 - 1) - 2
    texts = {name: path.read_text().splitlines() for name, path in response_files.items()}
    index = hub_open.index_of
    for row in rows:
        a, b = texts[row["system_a"]][index[row["prompt_id"]]], texts[row["system_b"]][index[row["prompt_id"]]]
        assert row["outcome"] == ("tie" if row["auto_tie"] else expected_outcome(a, b)), row
    inconsistent = sum(1 for r in rows if r["judge_consistent"] is False)
    ungraded = sum(1 for r in rows if r["item_kind"] == "ungraded")
    assert inconsistent > 20 and ungraded > 5  # the biases and unreadable answers did show
    assert f"{inconsistent} inconsistent across orders" in result.stderr and "usage:" in result.stderr
    assert f"{ungraded} ungraded" in result.stderr

    again = run_cli(*args[:-1], tmp_path / "again.jsonl")  # served from the call cache: nothing sent
    assert again.exit_code == 0 and server.requests == 2 * (3 * 120 - 1) - 2
    assert "0 live call(s), 718 from cache" in again.stderr
    strip = lambda rs: [{k: v for k, v in r.items() if k != "created_at"} for r in rs]  # noqa: E731
    assert strip(rows_of(tmp_path / "again.jsonl")) == strip(rows)

    baseline = run_cli(*args[:-1], tmp_path / "baseline.jsonl", "--baseline", "alpha", "--no-cache")
    assert baseline.exit_code == 0, baseline.stderr
    pairs = {(r["system_a"], r["system_b"]) for r in rows_of(tmp_path / "baseline.jsonl")}
    assert pairs == {("alpha", "beta"), ("alpha", "gamma")}

    fit = run_cli("irt", "fit", "--ratings", out, "--bootstrap", "20", "--no-progress", "--out", tmp_path / "fit.json")
    assert fit.exit_code == 0, fit.stderr
    fitted = json.loads((tmp_path / "fit.json").read_text())
    assert "alpha" in json.dumps(fitted) and "gamma" in json.dumps(fitted)


def human_file(path: Path, prompts: list[str], systems=(("alpha", 1), ("beta", 2))) -> Path:
    """A ratings download as the hub writes it: alpha (#1) vs beta (#2), three raters per prompt."""
    from evaluation.judgements import RATINGS_EXPORT_FIELDS

    lines = [json.dumps({"schema_version": 1, "kind": "ratings", "fields": list(RATINGS_EXPORT_FIELDS)})]
    (name_a, id_a), (name_b, id_b) = systems
    for n, prompt in enumerate(prompts):
        for rater in range(3):
            outcome = "A" if unit("human", prompt, str(rater)) < 0.6 else ("B" if rater == 2 else "tie")
            row = dict.fromkeys(RATINGS_EXPORT_FIELDS)
            row.update(
                rating_id=3 * n + rater,
                experiment_id=5,
                dataset="hub-open-v1",
                prompt_id=prompt,
                item_id=n,
                item_kind="pair",
                system_a=name_a,
                system_b=name_b,
                system_a_id=id_a,
                system_b_id=id_b,
                left="A",
                choice="left",
                outcome=outcome,
                auto_tie=False,
                rater=f"h{rater}",
                backend="hub",
                excluded=False,
                held_out=False,
            )
            lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_pairs_of_a_human_experiment_and_the_report_card(run_cli, server, response_files, tmp_path, hub_open):
    prompts = list(hub_open.prompt_ids[10:50])
    human = human_file(tmp_path / "human.jsonl", prompts)
    out = tmp_path / "judge.jsonl"
    result = run_cli(
        "judge",
        "pairwise",
        "--dataset",
        "hub-open-v1",
        "--pairs",
        human,
        "--endpoint",
        server.base_url,
        "--model",
        "sim-judge",
        "--out",
        out,
        "--no-progress",
        "--responses",
        f"alpha#1={response_files['alpha']}",
        "--responses",
        f"beta={response_files['beta']}",
    )
    assert result.exit_code == 0, result.stderr
    rows = rows_of(out)
    assert [r["prompt_id"] for r in rows] == prompts  # each distinct item once
    assert {(r["system_a_id"], r["system_b_id"]) for r in rows} == {(1, 2)}  # the hub's ids carried on

    card = run_cli("judge", "report", "--human", human, "--judge", out, "--json")
    assert card.exit_code == 0, card.stderr
    data = json.loads(card.stdout)
    assert data["judge"] == "judge:sim-judge|pairwise-v1|127.0.0.1" and data["dataset"] == "hub-open-v1"
    assert data["systems"] == [{"system": "1", "name": "alpha"}, {"system": "2", "name": "beta"}]
    graded = [r for r in rows if r["outcome"] is not None]
    consistent = sum(1 for r in graded if r["judge_consistent"])
    assert (data["position_consistency"]["count"], data["position_consistency"]["n"]) == (consistent, len(graded))
    assert data["human_agreement"]["items"] == len(graded)
    assert data["coverage"]["ungraded"] == len(rows) - len(graded)
    table = run_cli("judge", "report", "--human", human, "--judge", out)
    assert table.exit_code == 0 and "position consistency" in table.stdout and "Cohen's kappa" in table.stdout

    ppi = run_cli("rank", "ppi", "--human", human, "--judge", out, "--out", tmp_path / "ppi.json")
    assert ppi.exit_code == 0, ppi.stderr  # the prediction-powered ranking reads the judge file as it is
    assert {s["system"] for s in json.loads((tmp_path / "ppi.json").read_text())["systems"]} >= {"alpha", "beta"}

    others = human_file(tmp_path / "others.jsonl", prompts, systems=(("delta", 8), ("echo", 9)))
    refused = run_cli("judge", "report", "--human", others, "--judge", out)
    assert refused.exit_code == 3
    assert "share no system: the judge compared 1, 2; the humans judged 8, 9" in refused.stderr

    missing = run_cli(
        "judge",
        "pairwise",
        "--dataset",
        "hub-open-v1",
        "--pairs",
        human,
        "--endpoint",
        server.base_url,
        "--model",
        "m",
        "--out",
        tmp_path / "x.jsonl",
        "--responses",
        f"alpha={response_files['alpha']}",
    )
    assert missing.exit_code == 3 and "no responses for judged system(s) beta (#2)" in missing.stderr


def test_bad_input_and_endpoint_failures(run_cli, response_files, tmp_path, monkeypatch):
    base = ["judge", "pairwise", "--dataset", "hub-open-v1", "--out", tmp_path / "j.jsonl"]
    files = ["--responses", f"alpha={response_files['alpha']}", "--responses", f"beta={response_files['beta']}"]
    endpoint = ["--endpoint", "http://127.0.0.1:9/v1", "--model", "m"]
    bad = run_cli(*base, *endpoint, "--responses", "alpha", "--responses", f"beta={response_files['beta']}")
    assert bad.exit_code == 3 and "--responses 'alpha': expected SYSTEM=FILE" in bad.stderr
    mixed = run_cli(*base, *endpoint, "--responses", f"alpha#1={response_files['alpha']}", *files[2:])
    assert mixed.exit_code == 3 and "systems alpha (#1) have hub ids and beta not" in mixed.stderr
    template = run_cli(*base, *endpoint, *files, "--template", "v0")
    assert template.exit_code == 4 and "unknown pairwise template 'v0'" in template.stderr

    config = tmp_path / "endpoint.yaml"
    config.write_text("base_url: http://127.0.0.1:9/v1\nmodel: m\nmax_retries: 0\ntimeout_s: 2\n")
    down = run_cli(*base, *files, "--config", config, "--no-cache")
    assert down.exit_code == 6 and not (tmp_path / "j.jsonl").exists()

    secret = "sk-test-never-shown-0123456789"
    monkeypatch.setenv("JUDGE_KEY", "sk-wrong-key-also-never-shown-42")
    with LocalChatServer(responder=responder, expected_key=secret) as server:
        config.write_text(f"base_url: {server.base_url}\nmodel: m\nmax_retries: 0\napi_key_env: JUDGE_KEY\n")
        refused = run_cli(*base, *files, "--config", config, "--no-cache")
    assert refused.exit_code == 7
    assert "sk-wrong-key" not in refused.stderr + refused.stdout and not (tmp_path / "j.jsonl").exists()
