"""`chateval evaluate --conversations` end to end, the response-file path, and the metric cards."""

from __future__ import annotations

import json
import random
import statistics

import pytest

WORDS = ("the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "ran", "off", "to", "why", "dogs", "bark")


def random_log(seed: int, conversations: int) -> list[dict]:
    rng = random.Random(seed)
    records = []
    for number in range(conversations):
        messages = [{"role": "system", "content": "Be brief."}]
        for _ in range(rng.randint(1, 4)):
            for role in ("user", "assistant"):
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
                messages.append({"role": role, "content": text + rng.choice([".", "?", "!"])})
        records.append({"id": f"c{number}", "system": rng.choice(["bot-a", "bot-b"]), "messages": messages})
    return records


def json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_every_turn_is_scored_and_aggregated_by_system_and_role(run_cli, write_log):
    records = random_log(seed=3, conversations=150)
    result = run_cli("evaluate", "--conversations", write_log(records), "--json")
    assert result.exit_code == 0, result.stderr
    lines = json_lines(result.stdout)
    assert lines[0]["kind"] == "run" and lines[0]["conversations"] == 150
    assert {m["metric"] for m in lines[0]["metrics"]} >= {"length", "readability", "is-question", "repetition"}
    turns = [line for line in lines if line["kind"] == "turn"]
    # Every user and assistant message, none of the system ones, each once, with its id, index and role.
    expected_keys = [
        (r["id"], i, m["role"]) for r in records for i, m in enumerate(r["messages"]) if m["role"] != "system"
    ]
    assert [(t["conversation"], t["turn"], t["role"]) for t in turns] == expected_keys
    conversations = [line for line in lines if line["kind"] == "conversation"]
    assert [c["conversation"] for c in conversations] == [r["id"] for r in records]
    assert [c["values"]["turns.all"] for c in conversations] == [len(r["messages"]) for r in records]

    # The summary against statistics computed here from the log itself.
    summary = {(g["system"], g["role"], g["metric"]): g for g in lines[-1]["groups"]}
    assert lines[-1]["kind"] == "summary"
    for system in ("bot-a", "bot-b"):
        for role in ("user", "assistant"):
            contents = [
                m["content"] for r in records if r["system"] == system for m in r["messages"] if m["role"] == role
            ]
            words = [len(c.split()) for c in contents]
            group = summary[(system, role, "length.words")]
            assert group["n"] == len(words)
            assert group["mean"] == pytest.approx(statistics.mean(words))
            assert group["sd"] == pytest.approx(statistics.stdev(words))
            assert (group["min"], group["max"]) == (min(words), max(words))
            questions = summary[(system, role, "is-question")]
            assert questions["mean"] == pytest.approx(statistics.mean(c.endswith("?") for c in contents))


def test_the_table_shows_each_system_and_role(run_cli, write_log):
    result = run_cli("evaluate", "--conversations", write_log(random_log(seed=5, conversations=20)))
    assert result.exit_code == 0, result.stderr
    for label in ("bot-a", "bot-b", "assistant", "user", "conversation", "length.words", "repetition.across"):
        assert label in result.stdout


def test_a_plugin_metric_over_turns_and_conversations(run_cli, write_log, plugin):
    source = plugin(
        '@function_metric("echo-share", version="1", roles=["assistant"], keys=("user_words", "shared"),\n'
        '                 measures="m", does_not_measure="n")\n'
        "def echo(text, previous):\n"
        '    said = {w for m in previous if m["role"] == "user" for w in m["content"].split()}\n'
        "    mine = text.split()\n"
        '    return {"user_words": len(said), "shared": sum(w in said for w in mine) / len(mine)}\n\n'
        '@function_metric("ends-with-assistant", version="1", over="conversation", measures="m",\n'
        '                 does_not_measure="n", depends_on={"metric": "turns.all", "min": 3})\n'
        "def ends(messages, conversation_id):\n"
        '    return messages[-1]["role"] == "assistant"\n'
    )
    log = write_log(
        [
            {"id": "x", "messages": [{"role": "user", "content": "a b c d"}, {"role": "assistant", "content": "a z"}]},
            {
                "id": "y",
                "messages": [
                    {"role": "user", "content": "p q"},
                    {"role": "assistant", "content": "q q r s"},
                    {"role": "user", "content": "r"},
                ],
            },
        ]
    )
    args = ["--metrics", "echo-share,ends-with-assistant", "--plugin", source, "--json"]
    result = run_cli("evaluate", "--conversations", log, *args)
    assert result.exit_code == 0, result.stderr
    lines = json_lines(result.stdout)
    assert [m["metric"] for m in lines[0]["metrics"]] == ["echo-share", "turns", "ends-with-assistant"]
    turns = {(t["conversation"], t["turn"]): t for t in lines if t["kind"] == "turn"}
    assert turns[("x", 1)]["values"] == {"echo-share.user_words": 4, "echo-share.shared": 0.5}
    assert turns[("y", 1)]["values"] == {"echo-share.user_words": 2, "echo-share.shared": 0.5}
    assert ("x", 0) not in turns  # user turns: no metric asked for runs on them
    whole = {c["conversation"]: c for c in lines if c["kind"] == "conversation"}
    assert "ends-with-assistant" not in whole["x"]["values"]
    assert whole["x"]["skipped"] == {"ends-with-assistant": "turns.all=2, not 3 <= turns.all"}
    assert whole["y"]["values"]["ends-with-assistant"] == 0.0


def test_plugin_problems_are_refused_before_scoring(run_cli, write_log, plugin):
    log = write_log([{"id": "x", "messages": [{"role": "user", "content": "hello there"}]}])
    unknown = plugin(
        '@function_metric("orphan", version="1", measures="m", does_not_measure="n", depends_on={"metric": "nope"})\n'
        "def orphan(text): return 1\n"
    )
    result = run_cli("evaluate", "--conversations", log, "--plugin", unknown)
    assert result.exit_code == 4
    assert "'orphan' depends on 'nope', which is not a registered metric" in " ".join(result.stderr.split())
    broken = plugin(
        '@function_metric("broken-fm", version="1", measures="m", does_not_measure="n")\n'
        "def broken(text): return 1 / 0\n"
    )
    result = run_cli("evaluate", "--conversations", log, "--plugin", broken, "--metrics", "broken-fm")
    assert result.exit_code == 1
    error = " ".join(result.stderr.split())
    assert "metric 'broken-fm' failed on conversation 'x' (line 1), turn 0: ZeroDivisionError" in error
    wrong = plugin(
        '@function_metric("wrong-fm", version="1", measures="m", does_not_measure="n")\ndef wrong(text): return "1"\n'
    )
    result = run_cli("evaluate", "--conversations", log, "--plugin", wrong, "--metrics", "wrong-fm")
    assert result.exit_code == 1
    assert "returned '1' on conversation 'x' (line 1), turn 0; expected a number" in " ".join(result.stderr.split())


def test_turn_metrics_score_response_files_and_are_not_defaults(run_cli, hub_open, tmp_path):
    texts = [("Why? " if i % 3 == 0 else "Sure. ") + " ".join(["word"] * (i % 7)) for i in range(len(hub_open))]
    responses = tmp_path / "responses.txt"
    responses.write_text("\n".join(texts) + "\n", encoding="utf-8")
    args = ["evaluate", "--dataset", "hub-open-v1", "--responses", responses, "--json"]
    result = run_cli(*args, "--metrics", "length.words,is-question")
    assert result.exit_code == 0, result.stderr
    metrics = {m["metric"]: m for m in json.loads(result.stdout)["metrics"]}
    words = [len(t.split()) for t in texts]
    assert metrics["length.words"]["per_prompt"] == words
    assert metrics["length.words"]["corpus"] == pytest.approx(statistics.mean(words))
    assert metrics["is-question"]["corpus"] == pytest.approx(statistics.mean(t.startswith("Why?") for t in texts))
    assert "over=turn" in metrics["is-question"]["signature"]

    result = run_cli(*args)
    assert result.exit_code == 0, result.stderr
    names = {m["metric"] for m in json.loads(result.stdout)["metrics"]}
    assert "bleu-2" in names and not names & {"length.words", "readability", "is-question", "turns.all"}

    result = run_cli(*args, "--metrics", "turns.all")
    assert result.exit_code == 5
    assert "scores whole conversations" in result.stderr


def test_cards_say_what_each_metric_measures_and_does_not(run_cli):
    for name in ("length", "readability", "is-question", "repetition", "turns"):
        result = run_cli("metrics", "card", name, "--json")
        assert result.exit_code == 0, result.stderr
        card = json.loads(result.stdout)
        assert card["measures"] and card["does_not_measure"]
    result = run_cli("metrics", "card", "length.words")
    assert result.exit_code == 0 and "does not measure:" in result.stdout
    listing = " ".join(run_cli("metrics", "list").stdout.replace("│", " ").split())
    assert "Does not measure:" in listing and "readability" in listing
    result = run_cli("metrics", "card", "no-such-metric")
    assert result.exit_code == 4
