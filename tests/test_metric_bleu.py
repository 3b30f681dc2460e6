"""bleu-N is defined as the mean over prompts of sacrebleu's own `sentence_score`: check it per prompt
against sacrebleu on the four real NCM systems and on hand-made edge cases."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import sacrebleu

from evaluation.errors import ConfigurationError
from evaluation.metrics import MetricInputs, bleu, create

NCM_SYSTEMS = ("cakechat", "ncm_original", "opennmt_seq2seq", "parlai_seq2seq_personachat")

# (spec, bleu overrides); every combination is also handed to sacrebleu.BLEU with the same settings.
CONFIGS = [
    ("bleu-1", {}),
    ("bleu-2", {}),
    ("bleu-4", {}),
    ("bleu-2", {"tokenizer": "intl"}),
    ("bleu-2", {"tokenizer": "none"}),
    ("bleu-4", {"tokenizer": "none", "lowercase": True}),
    ("bleu-2", {"lowercase": True}),
    ("bleu-4", {"smooth_method": "floor"}),
    ("bleu-4", {"smooth_method": "floor", "smooth_value": 0.3}),
    ("bleu-4", {"smooth_method": "add-k"}),
    ("bleu-2", {"smooth_method": "add-k", "smooth_value": 2}),
    ("bleu-2", {"smooth_method": "none"}),
    ("bleu-4", {"smooth_method": "none", "effective_order": False}),
    ("bleu-2", {"effective_order": False}),
    ("bleu-4", {"smooth_method": "exp", "effective_order": False, "tokenizer": "intl"}),
    ("bleu-2", {"tokenizer": "none", "lowercase": True, "smooth_method": "none", "effective_order": False}),
]


@pytest.fixture(autouse=True)
def quiet_sacrebleu():
    """sacrebleu logs 'recommended to enable effective_order' for every sentence_score without it."""
    logger = logging.getLogger("sacrebleu")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def sacrebleu_scores(responses, references, n: int, config: dict) -> list[float]:
    settings = {
        "tokenize": config.get("tokenizer", "13a"),
        "lowercase": config.get("lowercase", False),
        "smooth_method": config.get("smooth_method", "exp"),
        "smooth_value": config.get("smooth_value"),
        "effective_order": config.get("effective_order", True),
    }
    bleu = sacrebleu.BLEU(max_ngram_order=n, **settings)
    return [bleu.sentence_score(hyp, list(refs)).score for hyp, refs in zip(responses, references, strict=True)]


def ours(responses, references, spec: str, config: dict | None = None):
    return create(spec, {"bleu": config or {}}).compute(MetricInputs(responses=responses, references=references))


def read_lines(path: Path) -> list[str]:
    text = path.read_bytes().decode("utf-8")
    if text.endswith("\n"):
        text = text[:-1]
    return [line.removesuffix("\r") for line in text.split("\n")]


# --- real NCM systems -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "config"), CONFIGS, ids=[f"{s}-{c}" for s, c in CONFIGS])
@pytest.mark.parametrize("system", NCM_SYSTEMS)
def test_ncm_per_prompt_equals_sacrebleu_sentence_score(ncm_dataset, shared_data, system, spec, config):
    responses = read_lines(shared_data / "responses" / f"ncm__{system}.txt")
    references = ncm_dataset.references
    assert len(responses) == len(references) == 200
    assert all(len(refs) == 2 for refs in references)
    n = int(spec.split("-")[1])
    expected = sacrebleu_scores(responses, references, n, config)
    result = ours(responses, references, spec, config)
    assert result.metric == spec
    assert len(result.per_prompt) == 200
    for i, (got, want) in enumerate(zip(result.per_prompt, expected, strict=True)):
        assert got == pytest.approx(want, abs=1e-9), f"prompt {i}: {responses[i]!r} vs {references[i]!r}"
    assert result.corpus == pytest.approx(sum(expected) / len(expected), abs=1e-9)
    if config.get("smooth_method") != "none":  # unsmoothed BLEU-4 is 0 on every NCM line
        assert any(value > 0 for value in expected)  # the comparison is not between two vectors of zeros


# --- hand-made edge cases -------------------------------------------------------------------------------

EDGE_RESPONSES = [
    "the cat sat on the mat",
    "",  # empty hypothesis
    "a b c d",
    "x",
    "the the the the",
    "hello world",
    "   ",
    "a b",
    "The Cat, sat!",
    "héllo wörld 你好 🙂",
]
EDGE_REFERENCES = [
    ["the cat is on the mat"],  # 1 reference
    ["something here"],
    ["a b c d", "a b", "a b c d e f"],  # 3 references
    ["x"],
    ["the cat", "", "the the"],  # an empty reference among 3
    ["", ""],  # only empty references
    ["a"],
    ["b a", "a b c"],  # 2 references
    ["the cat sat", "THE CAT , SAT !"],
    ["héllo wörld 你好 🙂"],
]


@pytest.mark.parametrize(("spec", "config"), [*CONFIGS, ("bleu-3", {}), ("bleu-5", {"tokenizer": "char"})])
def test_edge_cases_equal_sacrebleu(spec, config):
    n = int(spec.split("-")[1])
    expected = sacrebleu_scores(EDGE_RESPONSES, EDGE_REFERENCES, n, config)
    result = ours(EDGE_RESPONSES, EDGE_REFERENCES, spec, config)
    assert result.per_prompt == pytest.approx(expected, abs=1e-9)
    assert result.corpus == pytest.approx(sum(expected) / len(expected), abs=1e-9)


@pytest.mark.parametrize(("spec", "config"), [("bleu-2", {}), ("bleu-4", {"tokenizer": "none", "lowercase": True})])
def test_prompts_in_chunks_equal_sacrebleu(spec, config, monkeypatch):
    """Prompts are scored a chunk at a time from one encoding of all responses and references."""
    monkeypatch.setattr(bleu, "CHUNK_PROMPTS", 3)  # chunks with 1, 2, 3 and 0 usable references
    responses, references = EDGE_RESPONSES * 2, EDGE_REFERENCES * 2
    expected = sacrebleu_scores(responses, references, int(spec.split("-")[1]), config)
    assert ours(responses, references, spec, config).per_prompt == pytest.approx(expected, abs=1e-9)


def test_hand_example_brevity_penalty():
    # hyp "a b c" vs ref "a b c d": unigram 3/3, bigram 2/2 -> precisions 1, 1;
    # BP = exp(1 - 4/3) = exp(-1/3) -> 100 * 0.7165313105737893.
    result = ours(["a b c"], [["a b c d"]], "bleu-2")
    assert result.per_prompt[0] == pytest.approx(71.65313105737893, abs=1e-9)


def test_hand_example_identical_is_100_and_empty_hypothesis_is_0():
    # identical: every precision 1 and BP 1 -> 100. Empty hypothesis: no n-gram at all -> 0.
    result = ours(["a b c d", ""], [["a b c d"], ["a b c d"]], "bleu-4")
    assert result.per_prompt == pytest.approx([100.0, 0.0], abs=1e-9)
    assert result.corpus == pytest.approx(50.0, abs=1e-9)


def test_hand_example_clipping_and_closest_reference():
    # hyp "the the the" (3 tokens), refs "the cat" (2) and "the the cat sat" (4): both 1 away, the shorter
    # (2) wins -> no brevity penalty (3 >= 2). Unigrams: "the" x3 clipped to max count 2 -> 2/3.
    # Bigrams: (the the) x2, ref max count 1 -> 1/2. bleu-2 = 100 * sqrt(2/3 * 1/2) = 100 * sqrt(1/3).
    result = ours(["the the the"], [["the cat", "the the cat sat"]], "bleu-2")
    assert result.per_prompt[0] == pytest.approx(57.735026918962575, abs=1e-9)


def test_scale_option():
    # Same example on a 0-1 scale: sqrt(1/3).
    result = ours(["the the the"], [["the cat", "the the cat sat"]], "bleu-2", {"scale": 1.0})
    assert result.per_prompt[0] == pytest.approx(0.5773502691896258, abs=1e-12)
    assert result.corpus == pytest.approx(0.5773502691896258, abs=1e-12)


def test_no_prompts():
    result = ours([], [], "bleu-2")
    assert result.per_prompt == []
    assert result.corpus == 0.0


# --- signature ------------------------------------------------------------------------------------------


def test_signature_names_order_and_sacrebleu_version():
    bleu2, bleu4 = create("bleu-2"), create("bleu-4")
    assert bleu2.signature.startswith("bleu-2|v1|")
    assert "|n=2|" in bleu2.signature
    assert "|n=4|" in bleu4.signature
    # sacrebleu's own signature (nrefs, case, eff, tok, smooth, version) has no n-gram order, so ours must.
    assert bleu2.signature != bleu4.signature
    assert f"sacrebleu={sacrebleu.__version__}" in bleu2.signature
    assert bleu2.signature == (
        "bleu-2|v1|effective_order=yes|lowercase=no|n=2|scale=100.0|smooth_method=exp|smooth_value=None"
        f"|tokenizer=13a|sacrebleu={sacrebleu.__version__}"
    )


def test_signature_resolves_default_smooth_value():
    # sacrebleu's defaults: floor 0.1, add-k 1.
    assert "smooth_value=0.1" in create("bleu-2", {"bleu": {"smooth_method": "floor"}}).signature
    assert "smooth_value=1|" in create("bleu-2", {"bleu": {"smooth_method": "add-k"}}).signature
    assert "smooth_value=0.5" in create("bleu-2", {"bleu": {"smooth_method": "floor", "smooth_value": 0.5}}).signature


def test_signature_differs_for_every_setting():
    variants = [{}, *[config for _, config in CONFIGS if config], {"scale": 1.0}]
    signatures = {create("bleu-2", {"bleu": config}).signature for config in variants}
    assert len(signatures) == len({tuple(sorted(c.items())) for c in variants})


def test_result_signature_is_the_metric_signature():
    metric = create("bleu-4", {"bleu": {"tokenizer": "intl"}})
    result = metric.compute(MetricInputs(responses=["a b"], references=[["a b"]]))
    assert result.signature == metric.signature
    assert result.higher_is_better is True


# --- configuration errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        {"smooth_method": "laplace"},
        {"tokenizer": "single-space"},
        {"tokenizer": "nope"},
        {"no_such_option": 1},
    ],
)
def test_bad_configuration_is_refused(config):
    with pytest.raises(ConfigurationError):
        create("bleu-2", {"bleu": config})


def test_order_zero_is_refused():
    with pytest.raises(ConfigurationError):
        create("bleu-0")
