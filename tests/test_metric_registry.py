"""The metric registry: one common contract for every registered family, name parsing, and plugins declared
with @metric (in-process, by `--plugin FILE`, or through the `chateval.metrics` entry point)."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest
from gensim.models import KeyedVectors

from evaluation.dataset import Prompt, Turn, write_dataset
from evaluation.errors import ConfigurationError, EvaluationError, NotFoundError
from evaluation.evaluate import evaluate
from evaluation.loglik import LogLikelihoods
from evaluation.metrics import MetricInputs, create, families, load_plugin_file, metric, registry

# What each built-in's card must say; a family not listed here (added later) must still say True/False/None.
BUILTIN_DIRECTION = {
    "distinct": True,
    "avg-length": None,
    "bleu": True,
    "embedding-average": True,
    "perplexity": False,
}

UNICODE = "héllo wörld 你好 🙂"


@pytest.fixture
def clean_registry():
    """Families registered during a test are removed afterwards, and the loaded flag restored."""
    before = dict(registry._FAMILIES)
    loaded = registry._loaded
    modules = set(sys.modules)
    yield
    for name in set(registry._FAMILIES) - set(before):
        del registry._FAMILIES[name]
    registry._FAMILIES.update(before)
    registry._loaded = loaded
    for name in set(sys.modules) - modules:
        if name.startswith(("chateval_plugin_", "fake_plugin_mod")):
            del sys.modules[name]


@pytest.fixture
def vectors_file(tmp_path):
    words = ["hello", "world", "héllo", "wörld", "你好", "🙂", "there", "something", "a", "b"]
    kv = KeyedVectors(vector_size=3)
    kv.add_vectors(words, np.random.default_rng(0).normal(size=(len(words), 3)).astype(np.float32))
    path = tmp_path / "vectors.txt"
    kv.save_word2vec_format(str(path), binary=False)
    return path


def tiny_dataset(folder, references: list[list[str]]):
    prompts = [
        Prompt(id=f"p{i}", context=(Turn(role="user", content=f"prompt {i}"),), references=tuple(refs))
        for i, refs in enumerate(references)
    ]
    fields = dict(name="tiny", version="1", description="", source="", license="", citation="")
    return write_dataset(folder, fields, prompts)


def build(family: str, vectors_path) -> tuple:
    cls = families()[family]
    spec = f"{family}-2" if cls.parameter else family
    overrides = {family: {"vectors": str(vectors_path)}} if "embeddings" in cls.card.needs else {}
    return cls, create(spec, overrides)


def inputs_for(cls, responses, references) -> MetricInputs:
    loglik = None
    if "loglik" in cls.card.needs:
        n = len(responses)
        loglik = LogLikelihoods(logprob=-np.arange(1.0, n + 1), tokens=np.arange(1, n + 1, dtype=np.int64))
    return MetricInputs(
        responses=responses, references=references, prompt_ids=[f"p{i}" for i in range(len(responses))], loglik=loglik
    )


CASES = {
    "mixed": (
        ["hello world", UNICODE, "", "a b a b"],
        [["hello there world"], [UNICODE, "hello"], ["something"], ["a b"]],
    ),
    "unicode": ([UNICODE, UNICODE + " " + UNICODE], [[UNICODE], ["hello " + UNICODE]]),
    "empty-responses": (["", "", ""], [["hello world"], [UNICODE], ["a"]]),
}


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


# --- the common contract, over every registered family --------------------------------------------------


@pytest.mark.parametrize("family", sorted(families()))
def test_every_family_meets_the_contract(family, vectors_file):
    cls, instance = build(family, vectors_file)
    card = cls.card
    assert isinstance(card.description, str) and len(card.description.strip()) > 10
    assert card.higher_is_better in (True, False, None)
    if family in BUILTIN_DIRECTION:
        assert card.higher_is_better is BUILTIN_DIRECTION[family]
    assert isinstance(cls.version, str) and cls.version
    assert instance.signature.startswith(f"{instance.name}|v{cls.version}")
    for case, (responses, references) in CASES.items():
        inputs = inputs_for(cls, responses, references)
        first = instance.compute(inputs)
        second = instance.compute(inputs)
        assert len(first.per_prompt) == len(responses), case
        assert same(first.corpus, second.corpus), case
        assert first.per_prompt == second.per_prompt, case
        assert first.signature == second.signature == instance.signature, case
        assert first.metric == instance.name
        assert first.version == cls.version
        assert first.higher_is_better is card.higher_is_better
        assert all(v is None or math.isfinite(v) for v in first.per_prompt), case
        assert isinstance(first.corpus, float)
        json.dumps(first.to_dict())  # results can be written out as JSON
    # a fresh instance from the same spec is deterministic too
    _, again = build(family, vectors_file)
    responses, references = CASES["mixed"]
    assert (
        again.compute(inputs_for(cls, responses, references)).per_prompt
        == instance.compute(inputs_for(cls, responses, references)).per_prompt
    )


def test_builtins_are_registered():
    assert set(BUILTIN_DIRECTION) <= set(families())


# --- names --------------------------------------------------------------------------------------------


def test_unknown_metric_lists_available_ones():
    with pytest.raises(NotFoundError) as info:
        create("rouge-l")
    message = str(info.value)
    for name in ("distinct-N", "bleu-N", "avg-length", "embedding-average", "perplexity"):
        assert name in message


def test_unknown_metric_on_the_cli(run_cli, tmp_path):
    data = tiny_dataset(tmp_path / "tiny", [["a"]])
    responses = tmp_path / "r.txt"
    responses.write_text("a\n")
    result = run_cli("evaluate", "--dataset", data.path, "--responses", responses, "--metrics", "rouge-l")
    assert result.exit_code == 4
    assert "distinct-N" in result.stderr


def test_spec_parsing():
    assert create("distinct-3").config.n == 3
    assert create("distinct-3").name == "distinct-3"
    assert create("bleu-4").config.n == 4
    assert create("bleu-4").name == "bleu-4"
    assert create("distinct-12").config.n == 12
    # the numeric suffix wins over an override of the same option
    assert create("distinct-3", {"distinct": {"n": 5}}).config.n == 3
    assert create("avg-length").name == "avg-length"


@pytest.mark.parametrize("spec", ["avg-length-2", "perplexity-1", "distinct-x", "bleu", "", "BLEU-2"])
def test_bad_specs_are_not_found(spec):
    with pytest.raises(NotFoundError):
        create(spec)


def test_unknown_option_is_refused():
    with pytest.raises(ConfigurationError, match="no option"):
        create("distinct-2", {"distinct": {"smoothing": True}})


# --- @metric plain-function plugins ---------------------------------------------------------------------


def test_function_plugin_returning_a_list(tmp_path, clean_registry):
    @metric("test-char-count", version="3", description="Characters per response.", higher_is_better=None)
    def char_count(responses):
        return [len(r) for r in responses]

    assert "test-char-count" in families()
    data = tiny_dataset(tmp_path / "tiny", [["x"], ["y"], ["z"]])
    report = evaluate(data, ["ab", "", UNICODE], metrics=["test-char-count"])
    (outcome,) = report.outcomes
    result = outcome.result
    assert result.metric == "test-char-count"
    assert result.per_prompt == [2.0, 0.0, 16.0]  # len("héllo wörld 你好 🙂") = 5 + 1 + 5 + 1 + 2 + 1 + 1
    assert result.corpus == pytest.approx(6.0)  # (2 + 0 + 16) / 3
    assert result.signature.startswith("test-char-count|v3")
    assert result.higher_is_better is None
    assert families()["test-char-count"].card.description == "Characters per response."


def test_function_plugin_returning_corpus_and_list(tmp_path, clean_registry):
    @metric("test-pair", version="1", description="Returns its own corpus score.")
    def pair(responses, references, prompt_ids):
        assert references == [["x"], ["y"]]
        assert prompt_ids == ["p0", "p1"]
        return 42.0, [1.0, None]

    data = tiny_dataset(tmp_path / "tiny", [["x"], ["y"]])
    result = evaluate(data, ["a", "b"], metrics=["test-pair"]).outcomes[0].result
    assert result.corpus == 42.0
    assert result.per_prompt == [1.0, None]


def test_function_plugin_with_kwargs_gets_everything(tmp_path, clean_registry):
    seen = {}

    @metric("test-kwargs", version="1", description="Records what it is given.")
    def anything(**kwargs):
        seen.update(kwargs)
        return [0.0] * len(kwargs["responses"])

    data = tiny_dataset(tmp_path / "tiny", [["x"]])
    evaluate(data, ["a"], metrics=["test-kwargs"])
    assert set(seen) == {"responses", "references", "prompt_ids", "loglik"}


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ([1.0, 2.0], "returned 2 scores for 3 prompts"),
        ((1.0, [1.0]), "returned 1 scores for 3 prompts"),
        ([1.0, float("nan"), 2.0], "non-finite"),
        ([1.0, float("inf"), 2.0], "non-finite"),
        ("abc", "must return per-prompt scores"),
        (None, "must return per-prompt scores"),
    ],
)
def test_function_plugin_bad_return_is_a_clear_error(tmp_path, clean_registry, returned, message):
    @metric("test-bad", version="1", description="Returns the wrong thing.")
    def bad(responses):
        return returned

    data = tiny_dataset(tmp_path / "tiny", [["x"], ["y"], ["z"]])
    with pytest.raises(EvaluationError, match=message) as info:
        evaluate(data, ["a", "b", "c"], metrics=["test-bad"])
    assert "test-bad" in str(info.value)


@pytest.mark.parametrize("name", ["Bad Name", "9lives", "with space", "UPPER"])
def test_plugin_names_are_checked(name, clean_registry):
    with pytest.raises(ConfigurationError):
        metric(name, version="1", description="x")


def test_plugin_cannot_take_an_existing_name(clean_registry):
    with pytest.raises(ConfigurationError, match="already registered"):

        @metric("bleu", version="1", description="An impostor.")
        def impostor(responses):
            return [0.0] * len(responses)

    assert families()["bleu"].__module__ == "evaluation.metrics.bleu"


PLUGIN_FILE = """
from evaluation.metrics import metric


@metric("tplugin-words", version="2", description="Whitespace words per response.", higher_is_better=None)
def words(responses):
    return [len(r.split()) for r in responses]


@metric("tplugin-pair", version="1", description="Constant corpus score.", higher_is_better=True)
def pair(responses, references):
    return 0.5, [float(len(refs)) for refs in references]
"""


def test_plugin_file_on_the_cli(run_cli, tmp_path, clean_registry):
    plugin = tmp_path / "my_plugin.py"
    plugin.write_text(PLUGIN_FILE, encoding="utf-8")
    data = tiny_dataset(tmp_path / "tiny", [["x"], ["y", "z"]])
    responses = tmp_path / "r.txt"
    responses.write_text("one two three\n\n", encoding="utf-8")
    result = run_cli(
        "evaluate", "--dataset", data.path, "--responses", responses, "--plugin", plugin,
        "--metrics", "tplugin-words,tplugin-pair", "--json", "--allow-empty",  # the second response is empty on purpose
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    metrics = {m["metric"]: m for m in json.loads(result.stdout)["metrics"]}
    assert metrics["tplugin-words"]["per_prompt"] == [3.0, 0.0]
    assert metrics["tplugin-words"]["corpus"] == 1.5
    assert metrics["tplugin-words"]["signature"].startswith("tplugin-words|v2")
    assert metrics["tplugin-pair"]["corpus"] == 0.5
    assert metrics["tplugin-pair"]["per_prompt"] == [1.0, 2.0]


def test_plugin_file_in_metrics_list(run_cli, tmp_path, clean_registry):
    plugin = tmp_path / "listed_plugin.py"
    plugin.write_text(PLUGIN_FILE, encoding="utf-8")
    result = run_cli("metrics", "list", "--plugin", plugin)
    assert result.exit_code == 0, result.stderr
    assert "tplugin-words" in result.stdout
    assert "distinct-N" in result.stdout


def test_plugin_file_errors(run_cli, tmp_path, clean_registry):
    with pytest.raises(NotFoundError):
        load_plugin_file(tmp_path / "missing.py")
    broken = tmp_path / "broken_plugin.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ConfigurationError, match="boom"):
        load_plugin_file(broken)
    data = tiny_dataset(tmp_path / "tiny", [["x"]])
    responses = tmp_path / "r.txt"
    responses.write_text("a\n")
    result = run_cli("evaluate", "--dataset", data.path, "--responses", responses, "--plugin", broken)
    assert result.exit_code == 5
    assert "boom" in result.stderr


def test_plugin_function_without_vectors_uses_evaluate_defaults(tmp_path, clean_registry):
    # a plugin asked for by name runs alongside built-ins in the order given
    @metric("test-zero", version="1", description="Always zero.", higher_is_better=False)
    def zero(responses):
        return [0.0 for _ in responses]

    data = tiny_dataset(tmp_path / "tiny", [["a b"], ["c"]])
    report = evaluate(data, ["a b", "c"], metrics=["distinct-1", "test-zero", "bleu-2"])
    assert [o.metric for o in report.outcomes] == ["distinct-1", "test-zero", "bleu-2"]
    assert report.outcomes[1].result.higher_is_better is False


# --- entry-point plugins --------------------------------------------------------------------------------

ENTRY_POINT_MODULE = """
from evaluation.metrics import metric


@metric("fake", version="0.1", description="Registered through the chateval.metrics entry point.")
def fake(responses):
    return [1.0 for _ in responses]
"""


def test_entry_point_plugin_is_discovered(tmp_path, monkeypatch, clean_registry):
    dist_info = tmp_path / "fakeplugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[chateval.metrics]\nfake = fake_plugin_mod\n")
    (tmp_path / "fake_plugin_mod.py").write_text(ENTRY_POINT_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "fake" not in families()
    registry._loaded = False
    found = families()
    assert "fake" in found
    assert found["fake"].version == "0.1"
    assert set(BUILTIN_DIRECTION) <= set(found)
    data = tiny_dataset(tmp_path / "tiny", [["x"], ["y"]])
    result = evaluate(data, ["a", "b"], metrics=["fake"]).outcomes[0].result
    assert result.per_prompt == [1.0, 1.0]
    assert result.signature.startswith("fake|v0.1")


def test_entry_point_plugin_that_fails_to_import(tmp_path, monkeypatch, clean_registry):
    dist_info = tmp_path / "brokenplugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[chateval.metrics]\nbroken = fake_plugin_mod_broken\n")
    (tmp_path / "fake_plugin_mod_broken.py").write_text("raise ImportError('missing dependency xyz')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._loaded = False
    with pytest.raises(ConfigurationError, match="fake_plugin_mod_broken"):
        families()


def test_registry_is_clean_after_plugin_tests():
    # runs after the plugin tests in file order: nothing they registered is left behind
    leftovers = [name for name in families() if name.startswith(("test-", "tplugin-")) or name == "fake"]
    assert leftovers == []
