"""distinct-n and avg-length against hand-worked examples, a plain per-line Python recount on the real NCM
responses, and a property test on random token lists.

Golden values never come from the code under test: they are literals worked out by hand (arithmetic in the
comments) or counted here with Python sets over the tokens of each line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from evaluation.errors import ConfigurationError
from evaluation.metrics import MetricInputs, create

NCM_SYSTEMS = ("cakechat", "ncm_original", "opennmt_seq2seq", "parlai_seq2seq_personachat")


def distinct(responses: list[str], n: int, **config) -> tuple[float, list[float]]:
    result = create(f"distinct-{n}", {"distinct": config}).compute(
        MetricInputs(responses=responses, references=[[""] for _ in responses])
    )
    assert result.metric == f"distinct-{n}"
    return result.corpus, result.per_prompt


def read_lines(path: Path) -> list[str]:
    """One response per line: split on "\\n" (a trailing "\\r" dropped), the final newline optional."""
    text = path.read_bytes().decode("utf-8")
    if text.endswith("\n"):
        text = text[:-1]
    return [line.removesuffix("\r") for line in text.split("\n")]


def ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def reference_distinct(token_lists: list[list[str]], n: int) -> tuple[float, list[float]]:
    """The definition, written as a per-line loop over Python sets."""
    everything: set[tuple[str, ...]] = set()
    per_prompt = []
    for tokens in token_lists:
        grams = ngrams(tokens, n)
        everything.update(grams)
        per_prompt.append(len(set(grams)) / len(tokens) if tokens else 0.0)
    total = sum(len(tokens) for tokens in token_lists)
    return (len(everything) / total if total else 0.0), per_prompt


# --- hand-worked examples -------------------------------------------------------------------------------


def test_distinct_1_hand_example():
    # tokens: "a b a" (3) + "a b" (2) = 5; distinct unigrams over all responses {a, b} = 2 -> 2/5.
    # per prompt: {a, b}/3 = 2/3 and {a, b}/2 = 1.
    corpus, per_prompt = distinct(["a b a", "a b"], 1)
    assert corpus == pytest.approx(0.4, abs=1e-12)
    assert per_prompt == pytest.approx([2 / 3, 1.0], abs=1e-12)


def test_distinct_2_bigrams_do_not_cross_responses():
    # bigrams: "a b a" -> (a b), (b a); "a b" -> (a b). Distinct {(a b), (b a)} = 2, tokens 5 -> 2/5.
    # Crossing the boundary would add (a a) and give 3/5 instead.
    # per prompt: 2 distinct / 3 tokens, 1 / 2.
    corpus, per_prompt = distinct(["a b a", "a b"], 2)
    assert corpus == pytest.approx(0.4, abs=1e-12)
    assert per_prompt == pytest.approx([2 / 3, 0.5], abs=1e-12)


def test_distinct_3_trigrams_do_not_cross_responses():
    # trigrams: "a b a" -> (a b a); "a b" has none. 1 distinct / 5 tokens = 0.2.
    # Crossing would add (b a a) and (a a b): 3/5. Per prompt: 1/3 and 0/2 = 0.
    corpus, per_prompt = distinct(["a b a", "a b"], 3)
    assert corpus == pytest.approx(0.2, abs=1e-12)
    assert per_prompt == pytest.approx([1 / 3, 0.0], abs=1e-12)


def test_distinct_4_hand_example():
    # 4-grams: "a b c d e" -> (a b c d), (b c d e); "a b c d" -> (a b c d); "x y z" -> none.
    # Distinct {(a b c d), (b c d e)} = 2; tokens 5 + 4 + 3 = 12 -> 2/12 = 1/6.
    # Crossing windows such as (d e a b) or (c d x y) would add more. Per prompt: 2/5, 1/4, 0/3.
    corpus, per_prompt = distinct(["a b c d e", "a b c d", "x y z"], 4)
    assert corpus == pytest.approx(1 / 6, abs=1e-12)
    assert per_prompt == pytest.approx([0.4, 0.25, 0.0], abs=1e-12)


def test_distinct_2_repeated_bigram_counts_once():
    # "a a a a": bigrams (a a) x3 -> 1 distinct / 4 tokens = 0.25; "a a": (a a), already seen -> corpus
    # distinct stays 1, tokens 6 -> 1/6; per prompt 1/4 and 1/2.
    corpus, per_prompt = distinct(["a a a a", "a a"], 2)
    assert corpus == pytest.approx(1 / 6, abs=1e-12)
    assert per_prompt == pytest.approx([0.25, 0.5], abs=1e-12)


def test_empty_response_scores_zero_and_adds_no_tokens():
    # "" has no tokens: per prompt 0. Corpus: {a} over 0 + 2 tokens = 1/2.
    corpus, per_prompt = distinct(["", "a a"], 1)
    assert corpus == pytest.approx(0.5, abs=1e-12)
    assert per_prompt == [0.0, 0.5]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_all_empty_responses_give_zero(n):
    corpus, per_prompt = distinct(["", "", "   "], n)
    assert corpus == 0.0
    assert per_prompt == [0.0, 0.0, 0.0]


def test_no_responses():
    corpus, per_prompt = distinct([], 2)
    assert corpus == 0.0
    assert per_prompt == []


def test_response_shorter_than_n_counts_its_tokens():
    # "a b" has no trigram but its 2 tokens are still in the denominator:
    # trigrams: "x y z" -> 1; tokens 3 + 2 = 5 -> 1/5.
    corpus, per_prompt = distinct(["x y z", "a b"], 3)
    assert corpus == pytest.approx(0.2, abs=1e-12)
    assert per_prompt == pytest.approx([1 / 3, 0.0], abs=1e-12)


# --- tokenizer variants ---------------------------------------------------------------------------------


def test_tokenizer_13a_splits_punctuation():
    # 13a: "Hello, world!" -> Hello , world !  -> 4 tokens, 4 distinct; with "hello , hello" -> hello , hello:
    # unigrams over both {Hello , world ! hello} = 5 / (4 + 3) tokens = 5/7.
    corpus, per_prompt = distinct(["Hello, world!", "hello , hello"], 1, tokenizer="13a")
    assert corpus == pytest.approx(5 / 7, abs=1e-12)
    assert per_prompt == pytest.approx([1.0, 2 / 3], abs=1e-12)


def test_tokenizer_none_splits_on_whitespace_only():
    # none: "Hello, world!" -> [Hello,  world!] (2 tokens); "hello , hello" -> [hello , hello] (3 tokens).
    # Distinct {Hello, world! hello ,} = 4 / 5.
    corpus, per_prompt = distinct(["Hello, world!", "hello , hello"], 1, tokenizer="none")
    assert corpus == pytest.approx(4 / 5, abs=1e-12)
    assert per_prompt == pytest.approx([1.0, 2 / 3], abs=1e-12)


def test_lowercase_option():
    # "Hi hi HI": case-sensitive 3 distinct / 3; lower-cased {hi} = 1/3.
    assert distinct(["Hi hi HI"], 1, lowercase=False)[0] == pytest.approx(1.0, abs=1e-12)
    assert distinct(["Hi hi HI"], 1, lowercase=True)[0] == pytest.approx(1 / 3, abs=1e-12)


def test_single_space_tokenizer_counts_empty_tokens():
    # "a  a".split(" ") = [a, "", a]: 3 tokens, distinct {a, ""} = 2 -> 2/3;
    # the "none" tokenizer sees [a, a]: 1/2.
    assert distinct(["a  a"], 1, tokenizer="single-space")[0] == pytest.approx(2 / 3, abs=1e-12)
    assert distinct(["a  a"], 1, tokenizer="none")[0] == pytest.approx(0.5, abs=1e-12)
    # bigrams of [a, "", a]: (a ""), ("" a) -> 2 distinct / 3 tokens.
    assert distinct(["a  a"], 2, tokenizer="single-space")[0] == pytest.approx(2 / 3, abs=1e-12)


def test_char_tokenizer():
    # char: "ab a" -> a b a (whitespace dropped) -> {a, b} / 3.
    assert distinct(["ab a"], 1, tokenizer="char")[0] == pytest.approx(2 / 3, abs=1e-12)


def test_unknown_tokenizer_is_refused():
    with pytest.raises(ConfigurationError, match="unknown tokenizer"):
        create("distinct-1", {"distinct": {"tokenizer": "whitespace-ish"}})


def test_n_must_be_positive():
    with pytest.raises(ConfigurationError):
        create("distinct-0")


def test_signature_names_every_setting():
    metric = create("distinct-2", {"distinct": {"tokenizer": "none", "lowercase": True}})
    assert metric.signature == "distinct-2|v1|lowercase=yes|n=2|tokenizer=none"


def test_details_report_counts():
    # "a b a" + "a b": 2 distinct unigrams over 5 tokens.
    result = create("distinct-1").compute(MetricInputs(responses=["a b a", "a b"], references=[[""], [""]]))
    assert result.details == {"distinct_ngrams": 2, "total_tokens": 5}


# --- avg-length -----------------------------------------------------------------------------------------


def test_avg_length_hand_example():
    # tokens 3, 2, 0 -> mean 5/3.
    result = create("avg-length").compute(MetricInputs(responses=["a b a", "a b", ""], references=[[""]] * 3))
    assert result.corpus == pytest.approx(5 / 3, abs=1e-12)
    assert result.per_prompt == [3.0, 2.0, 0.0]


def test_avg_length_uses_its_tokenizer():
    # 13a: "Hi, you!" -> Hi , you ! = 4 tokens; none: [Hi, you!] = 2; single-space on "a  b": [a, "", b] = 3.
    inputs = MetricInputs(responses=["Hi, you!", "a  b"], references=[[""], [""]])
    assert create("avg-length").compute(inputs).per_prompt == [4.0, 2.0]
    assert create("avg-length", {"avg-length": {"tokenizer": "none"}}).compute(inputs).per_prompt == [2.0, 2.0]
    single = create("avg-length", {"avg-length": {"tokenizer": "single-space"}}).compute(inputs)
    assert single.per_prompt == [2.0, 3.0]
    assert single.corpus == pytest.approx(2.5, abs=1e-12)


# --- the real NCM responses against a per-line loop -----------------------------------------------------

TOKENIZERS = {
    "none": str.split,
    "single-space": lambda line: line.split(" "),
    "13a": lambda line: Tokenizer13a()(line.rstrip()).split(),  # sacrebleu's own tokenizer, used directly
}


@pytest.mark.parametrize("tokenizer", sorted(TOKENIZERS))
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("system", NCM_SYSTEMS)
def test_ncm_responses_match_per_line_loop(shared_data, system, n, tokenizer):
    responses = read_lines(shared_data / "responses" / f"ncm__{system}.txt")
    assert len(responses) == 200
    expected_corpus, expected_per_prompt = reference_distinct([TOKENIZERS[tokenizer](r) for r in responses], n)
    corpus, per_prompt = distinct(responses, n, tokenizer=tokenizer)
    assert corpus == pytest.approx(expected_corpus, abs=1e-12)
    assert per_prompt == pytest.approx(expected_per_prompt, abs=1e-12)


def test_ncm_corpus_is_not_mean_of_per_prompt(shared_data):
    # The corpus score counts distinctness across the file: repeated generic replies lower it, which the
    # mean of the per-line ratios would not show.
    responses = read_lines(shared_data / "responses" / "ncm__cakechat.txt")
    corpus, per_prompt = distinct(responses, 1, tokenizer="none")
    assert corpus < sum(per_prompt) / len(per_prompt)


# --- property test --------------------------------------------------------------------------------------

token_lists = st.lists(
    st.lists(st.sampled_from(["a", "b", "c", "d", "é", "你"]), max_size=9),
    max_size=7,
)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token_lists, st.integers(min_value=1, max_value=4))
def test_property_bounds_and_set_recount(lists, n):
    responses = [" ".join(tokens) for tokens in lists]
    corpus, per_prompt = distinct(responses, n, tokenizer="none")
    expected_corpus, expected_per_prompt = reference_distinct(lists, n)
    assert 0.0 <= corpus <= 1.0
    assert all(0.0 <= value <= 1.0 for value in per_prompt)
    assert len(per_prompt) == len(lists)
    assert corpus == pytest.approx(expected_corpus, abs=1e-12)
    assert per_prompt == pytest.approx(expected_per_prompt, abs=1e-12)
