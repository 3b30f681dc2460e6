"""Dependencies between metrics: order, range gates, cycles and unknown names refused at load."""

from __future__ import annotations

import re

import pytest

from evaluation.errors import ConfigurationError, NotFoundError
from evaluation.function_metrics.conversations import parse_conversations
from evaluation.function_metrics.registry import plan_for
from evaluation.function_metrics.runner import score_conversations
from evaluation.metrics.registry import load_plugin_file

LOG = b"\n".join(
    [
        b'{"id": "a", "messages": [{"role": "user", "content": "Why is the sky blue?"},'
        b' {"role": "assistant", "content": "Light scatters. Want more?"},'
        b' {"role": "user", "content": "No thanks."}, {"role": "assistant", "content": "Bye now."}]}',
        b'{"id": "b", "messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello?"}]}',
    ]
)


def run(names):
    nodes = plan_for(names)
    return nodes, list(score_conversations(parse_conversations(LOG, name="log.jsonl"), nodes))


def test_a_metric_runs_after_what_it_depends_on_even_when_registered_first(plugin):
    # "z-last" is declared before "a-first" and "m-middle", and depends on both through a chain.
    load_plugin_file(
        plugin(
            "CALLS = []\n"
            '@function_metric("z-last", version="1", measures="m", does_not_measure="n",\n'
            '                 depends_on={"metric": "m-middle", "min": 0})\n'
            "def z(text):\n"
            '    CALLS.append("z")\n'
            "    return 1\n\n"
            '@function_metric("m-middle", version="1", measures="m", does_not_measure="n",\n'
            '                 depends_on=[{"metric": "a-first"}])\n'
            "def m(text):\n"
            '    CALLS.append("m")\n'
            "    return 1\n\n"
            '@function_metric("a-first", version="1", measures="m", does_not_measure="n")\n'
            "def a(text):\n"
            '    CALLS.append("a")\n'
            "    return 1\n"
        )
    )
    nodes, results = run(["z-last"])
    assert [node.name for node in nodes] == ["a-first", "m-middle", "z-last"]
    turn = results[0].turns[0]
    assert turn.values == {"a-first": 1.0, "m-middle": 1.0, "z-last": 1.0}
    assert list(turn.values) == ["a-first", "m-middle", "z-last"]  # computed in that order


def test_a_gated_metric_runs_only_where_the_other_value_is_in_range(plugin):
    load_plugin_file(
        plugin(
            '@function_metric("answer-words", version="1", measures="m", does_not_measure="n",\n'
            '                 depends_on={"metric": "is-question", "min": 1})\n'
            "def answer_words(text):\n"
            "    return len(text.split())\n"
        )
    )
    nodes, results = run(["answer-words"])
    assert [node.name for node in nodes] == ["is-question", "answer-words"]
    seen = {(r.conversation.id, i): t for r in results for i, t in r.turns.items()}
    questions = {("a", 0), ("a", 1), ("b", 1)}  # turns ending a sentence with "?", read off LOG by hand
    for key, turn in seen.items():
        if key in questions:
            assert turn.values["answer-words"] == len(parse_text(results, key).split())
            assert "answer-words" not in turn.skipped
        else:
            assert "answer-words" not in turn.values
            assert turn.skipped["answer-words"] == "is-question=0, not 1 <= is-question"


def parse_text(results, key):
    conversation = next(r.conversation for r in results if r.conversation.id == key[0])
    return conversation.messages[key[1]].content


def test_upper_bounds_and_conversation_values_gate_turns(plugin):
    load_plugin_file(
        plugin(
            '@function_metric("short-talk", version="1", measures="m", does_not_measure="n", roles=["assistant"],\n'
            '                 depends_on=[{"metric": "turns.all", "max": 2}, {"metric": "length.words", "max": 1}])\n'
            "def short_talk(text):\n"
            "    return 1\n"
        )
    )
    _, results = run(["short-talk"])
    by_id = {r.conversation.id: r for r in results}
    # Conversation a has 4 messages: gated out on every assistant turn; b has 2 and its answer one word.
    assert by_id["a"].turns[1].skipped["short-talk"] == "turns.all=4, not turns.all <= 2"
    assert by_id["b"].turns[1].values["short-talk"] == 1.0
    assert "short-talk" not in by_id["b"].turns[0].values  # a user turn: not in the metric's roles


@pytest.mark.parametrize(
    ("source", "cycle"),
    [
        (
            '@function_metric("x-fm", version="1", measures="m", does_not_measure="n", depends_on={"metric": "y-fm"})\n'
            "def x(text): return 1\n"
            '@function_metric("y-fm", version="1", measures="m", does_not_measure="n", depends_on={"metric": "x-fm"})\n'
            "def y(text): return 1\n",
            "x-fm -> y-fm -> x-fm",
        ),
        (
            '@function_metric("p-fm", version="1", measures="m", does_not_measure="n", depends_on={"metric": "q-fm"})\n'
            "def p(text): return 1\n"
            '@function_metric("q-fm", version="1", measures="m", does_not_measure="n", depends_on={"metric": "r-fm"})\n'
            "def q(text): return 1\n"
            '@function_metric("r-fm", version="1", measures="m", does_not_measure="n",\n'
            '                 keys=("k",), depends_on={"metric": "p-fm"})\n'
            "def r(text): return {'k': 1}\n",
            "p-fm -> q-fm -> r-fm -> p-fm",
        ),
        (
            '@function_metric("self-fm", version="1", measures="m", does_not_measure="n",\n'
            '                 depends_on={"metric": "self-fm"})\n'
            "def s(text): return 1\n",
            "self-fm -> self-fm",
        ),
    ],
)
def test_a_dependency_cycle_is_refused_at_load_naming_it(plugin, source, cycle):
    with pytest.raises(ConfigurationError, match=f"metric dependency cycle: {cycle}"):
        load_plugin_file(plugin(source))


def test_unknown_and_ambiguous_dependencies_are_refused(plugin):
    load_plugin_file(
        plugin(
            '@function_metric("lonely", version="1", measures="m", does_not_measure="n",\n'
            '                 depends_on={"metric": "no-such-metric"})\n'
            "def lonely(text): return 1\n"
            '@function_metric("vague", version="1", measures="m", does_not_measure="n",\n'
            '                 depends_on={"metric": "length"})\n'
            "def vague(text): return 1\n"
        )
    )
    with pytest.raises(NotFoundError, match="'lonely' depends on 'no-such-metric', which is not a registered"):
        plan_for(["lonely"])
    with pytest.raises(ConfigurationError, match=re.escape("name one of length.words, length.chars")):
        plan_for(["vague"])


def test_levels_and_roles_of_a_dependency_are_checked(plugin):
    load_plugin_file(
        plugin(
            '@function_metric("conv-on-turn", version="1", over="conversation", measures="m", does_not_measure="n",\n'
            '                 depends_on={"metric": "is-question"})\n'
            "def c(messages): return 1\n"
            '@function_metric("user-only", version="1", roles=["user"], measures="m", does_not_measure="n")\n'
            "def u(text): return 1\n"
            '@function_metric("needs-user-value", version="1", measures="m", does_not_measure="n",\n'
            '                 depends_on={"metric": "user-only"})\n'
            "def n(text): return 1\n"
        )
    )
    with pytest.raises(ConfigurationError, match="scores whole conversations but depends on 'is-question'"):
        plan_for(["conv-on-turn"])
    with pytest.raises(ConfigurationError, match="not computed on assistant turns"):
        plan_for(["needs-user-value"])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ('depends_on={"metric": "a", "min": 2, "max": 1}', "min 2 above max 1"),
        ('depends_on={"metric": "a", "low": 1}', "unknown key"),
        ('depends_on={"metric": "a", "min": "1"}', "must be numbers"),
        ('roles=["moderator"]', "roles must be some of"),
        ('keys=("a", "a")', "keys must be distinct"),
        ('over="corpus"', "over must be 'turn' or 'conversation'"),
    ],
)
def test_bad_declarations_are_refused_at_load(plugin, options, message):
    source = f'@function_metric("bad-decl", version="1", measures="m", does_not_measure="n", {options})\n'
    with pytest.raises(ConfigurationError, match=message):
        load_plugin_file(plugin(source + "def f(text): return 1\n"))
