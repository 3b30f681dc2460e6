"""embedding-average against hand-computed cosines and a numpy re-implementation, with word vectors built here
with gensim and saved in all three supported formats (word2vec text, word2vec binary, gensim native)."""

from __future__ import annotations

import hashlib
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
from gensim.models import KeyedVectors

from evaluation.embeddings import load_vectors
from evaluation.errors import ConfigurationError, InvalidInputError, NotFoundError
from evaluation.evaluate import evaluate
from evaluation.metrics import MetricInputs, create

SQRT_HALF = math.sqrt(0.5)

# 2-d vectors with exactly representable components, so every file format round-trips them bit for bit.
WORDS_2D = {"a": (1.0, 0.0), "b": (0.0, 1.0), "c": (1.0, 1.0), "d": (3.0, 4.0), "héllo": (0.5, -2.0)}

# prompt: (response, references) -> hand-computed score with multi_reference max / mean
HAND_2D = [
    # mean("a b") = (.5, .5). vs "a" = (1, 0): .5 / (sqrt(.5) * 1) = sqrt(.5); vs "c" = (1, 1): cos 1.
    # max -> 1; mean -> (1 + sqrt(.5)) / 2.
    ("a b", ["a", "c"], 1.0, (1.0 + SQRT_HALF) / 2),
    # "zz" is OOV and ignored: mean = a = (1, 0). vs d = (3, 4): 3 / 5.
    ("a zz", ["d"], 0.6, 0.6),
    # no known token in the response -> 0.
    ("qq", ["b"], 0.0, 0.0),
    # no reference has a known token -> left out (None).
    ("b", ["qq", "xx yy"], None, None),
    # reference "zz" has no known token and is skipped (not counted as 0 in the mean): vs d = 3/5.
    ("a", ["zz", "d"], 0.6, 0.6),
]
# corpus over the 4 scored prompts: max (1 + .6 + 0 + .6) / 4 = .55;
# mean ((1 + sqrt(.5)) / 2 + .6 + 0 + .6) / 4 = 0.5133883476483184.
HAND_2D_CORPUS = {"max": 0.55, "mean": 0.5133883476483184}


def keyed_vectors(words: dict[str, tuple[float, ...]]) -> KeyedVectors:
    dims = len(next(iter(words.values())))
    kv = KeyedVectors(vector_size=dims)
    kv.add_vectors(list(words), np.array(list(words.values()), dtype=np.float32))
    return kv


def save_all_formats(kv: KeyedVectors, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"text": folder / "vectors.txt", "binary": folder / "vectors.bin", "native": folder / "vectors.kv"}
    kv.save_word2vec_format(str(paths["text"]), binary=False)
    kv.save_word2vec_format(str(paths["binary"]), binary=True)
    kv.save(str(paths["native"]), separately=["vectors"])  # vectors in vectors.kv.vectors.npy
    return paths


@pytest.fixture
def vectors_2d(tmp_path) -> dict[str, Path]:
    return save_all_formats(keyed_vectors(WORDS_2D), tmp_path / "vectors-2d")


def embedding(path: Path | str, responses, references, **config):
    metric = create("embedding-average", {"embedding-average": {"vectors": str(path), **config}})
    return metric.compute(MetricInputs(responses=responses, references=references))


def sha16(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


# --- hand-computed examples -----------------------------------------------------------------------------


@pytest.mark.parametrize("multi_reference", ["max", "mean"])
@pytest.mark.parametrize("fmt", ["text", "binary", "native"])
def test_hand_example_2d(vectors_2d, fmt, multi_reference):
    responses = [r for r, *_ in HAND_2D]
    references = [refs for _, refs, *_ in HAND_2D]
    expected = [mx if multi_reference == "max" else mean for *_, mx, mean in HAND_2D]
    result = embedding(vectors_2d[fmt], responses, references, multi_reference=multi_reference)
    assert result.per_prompt[3] is None
    assert result.per_prompt == pytest.approx(expected, abs=1e-12)
    assert result.corpus == pytest.approx(HAND_2D_CORPUS[multi_reference], abs=1e-12)
    assert result.details["prompts_left_out"] == 1


def test_hand_example_3d(tmp_path):
    words = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 2.0), "w": (0.0, 2.0, 0.0)}
    path = save_all_formats(keyed_vectors(words), tmp_path / "v3")["text"]
    # mean("x y") = (.5, .5, 0); mean("z w") = (0, 1, 1): dot .5 / (sqrt(.5) * sqrt(2)) = .5.
    # mean("x x y") = (2/3, 1/3, 0): dot 1/3 + 1/6 = .5 / (sqrt(.5) * sqrt(5/9)) = 3 / sqrt(10) -- repeated
    # tokens count as often as they occur.
    result = embedding(path, ["x y", "x y"], [["z w"], ["x x y"]])
    assert result.per_prompt == pytest.approx([0.5, 3 / math.sqrt(10)], abs=1e-12)
    assert result.corpus == pytest.approx((0.5 + 3 / math.sqrt(10)) / 2, abs=1e-12)
    assert result.details["prompts_left_out"] == 0


def test_all_oov_gives_left_out_prompts_and_zero_response(vectors_2d):
    # nothing known anywhere: both prompts left out.
    result = embedding(vectors_2d["text"], ["zz", ""], [["qq"], ["rr"]])
    assert result.per_prompt == [None, None]
    assert result.details["prompts_left_out"] == 2
    # an empty response against a usable reference scores 0, it is not left out.
    result = embedding(vectors_2d["text"], ["", "a"], [["a"], ["a"]])
    assert result.per_prompt == pytest.approx([0.0, 1.0], abs=1e-12)
    assert result.details["prompts_left_out"] == 0


def test_lowercase_option(vectors_2d):
    # "A B" is OOV as typed; lower-cased it is "a b" -> cos with "c" = 1.
    assert embedding(vectors_2d["text"], ["A B"], [["c"]]).per_prompt == [0.0]
    assert embedding(vectors_2d["text"], ["A B"], [["c"]], lowercase=True).per_prompt == pytest.approx([1.0])


def test_unicode_word(vectors_2d):
    # "héllo" = (.5, -2) vs d = (3, 4): (1.5 - 8) / (sqrt(4.25) * 5) = -6.5 / (5 * 2.0615528128088303).
    result = embedding(vectors_2d["binary"], ["héllo"], [["d"]], tokenizer="none")
    assert result.per_prompt == pytest.approx([-6.5 / (5 * math.sqrt(4.25))], abs=1e-12)


def test_invalid_multi_reference_is_refused(vectors_2d):
    with pytest.raises(ConfigurationError):
        create("embedding-average", {"embedding-average": {"vectors": str(vectors_2d["text"]), "multi_reference": "x"}})


# --- file formats, memory mapping, conversion -----------------------------------------------------------


def test_three_formats_give_identical_scores_and_native_is_memory_mapped(vectors_2d):
    responses = [r for r, *_ in HAND_2D] + ["d c b a", "héllo a"]
    references = [refs for _, refs, *_ in HAND_2D] + [["b b", "a d"], ["héllo", "c"]]
    results = {fmt: embedding(path, responses, references) for fmt, path in vectors_2d.items()}
    assert results["text"].per_prompt == results["binary"].per_prompt == results["native"].per_prompt
    assert results["text"].corpus == results["binary"].corpus == results["native"].corpus
    assert isinstance(load_vectors(vectors_2d["native"]).keyed_vectors.vectors, np.memmap)
    for fmt in ("text", "binary", "native"):
        assert load_vectors(vectors_2d[fmt]).dimensions == 2
        assert load_vectors(vectors_2d[fmt]).vocabulary_size == len(WORDS_2D)


@pytest.mark.parametrize("source", ["text", "binary"])
def test_cli_convert_round_trip(run_cli, vectors_2d, tmp_path, source):
    target = tmp_path / f"converted-{source}.kv"
    result = run_cli("embeddings", "convert", vectors_2d[source], target)
    assert result.exit_code == 0, result.stderr
    assert "5 words x 2 dims" in result.stdout
    assert (tmp_path / f"converted-{source}.kv.vectors.npy").is_file()
    converted = load_vectors(target)
    assert isinstance(converted.keyed_vectors.vectors, np.memmap)
    assert converted.sha256 in result.stdout
    responses = [r for r, *_ in HAND_2D]
    references = [refs for _, refs, *_ in HAND_2D]
    assert (
        embedding(target, responses, references).per_prompt
        == embedding(vectors_2d[source], responses, references).per_prompt
    )
    # converting onto an existing target is refused (exit code 3: invalid input)
    again = run_cli("embeddings", "convert", vectors_2d[source], target)
    assert again.exit_code == 3
    assert "already exists" in again.stderr


def test_cli_info(run_cli, vectors_2d):
    result = run_cli("embeddings", "info", vectors_2d["text"])
    assert result.exit_code == 0, result.stderr
    assert "5 words x 2 dims" in result.stdout
    assert hashlib.sha256(vectors_2d["text"].read_bytes()).hexdigest() in result.stdout


def test_missing_and_unreadable_vectors(tmp_path):
    with pytest.raises(NotFoundError):
        embedding(tmp_path / "missing.txt", ["a"], [["a"]])
    bad = tmp_path / "bad.txt"
    bad.write_text("this is not\na word2vec file\n")
    with pytest.raises(InvalidInputError, match="cannot read word vectors"):
        embedding(bad, ["a"], [["a"]])


# --- signature ------------------------------------------------------------------------------------------


def test_signature_has_checksum_and_dimensions(vectors_2d):
    metric = create("embedding-average", {"embedding-average": {"vectors": str(vectors_2d["text"])}})
    assert metric.signature == (
        "embedding-average|v1|lowercase=no|multi_reference=max|tokenizer=13a"
        f"|vectors_dim=2|vectors_sha256={sha16(vectors_2d['text'])}"
    )
    binary = create("embedding-average", {"embedding-average": {"vectors": str(vectors_2d["binary"])}})
    assert f"vectors_sha256={sha16(vectors_2d['binary'])}" in binary.signature
    # the path is not part of the signature: the same file elsewhere signs the same
    assert "vectors.txt" not in metric.signature


def test_signature_changes_with_other_vectors(tmp_path, vectors_2d):
    other = save_all_formats(keyed_vectors({**WORDS_2D, "c": (-1.0, 1.0)}), tmp_path / "other")
    first = create("embedding-average", {"embedding-average": {"vectors": str(vectors_2d["text"])}}).signature
    second = create("embedding-average", {"embedding-average": {"vectors": str(other["text"])}}).signature
    assert first != second
    assert f"vectors_sha256={sha16(other['text'])}" in second
    three = save_all_formats(keyed_vectors({"a": (1.0, 0.0, 0.0)}), tmp_path / "three")
    assert (
        "vectors_dim=3" in create("embedding-average", {"embedding-average": {"vectors": str(three["text"])}}).signature
    )


def test_signature_and_scores_follow_a_file_replaced_in_place(tmp_path):
    path = tmp_path / "vectors.txt"
    keyed_vectors(WORDS_2D).save_word2vec_format(str(path), binary=False)
    before = embedding(path, ["a b"], [["c"]])
    assert before.per_prompt == pytest.approx([1.0])  # (.5, .5) vs (1, 1)
    time.sleep(0.01)
    keyed_vectors({**WORDS_2D, "c": (-1.0, 1.0)}).save_word2vec_format(str(path), binary=False)
    os.utime(path)  # make sure the modification time moves
    after = embedding(path, ["a b"], [["c"]])
    assert f"vectors_sha256={sha16(path)}" in after.signature
    assert after.signature != before.signature
    assert after.per_prompt == pytest.approx([0.0], abs=1e-12)  # (.5, .5) vs (-1, 1) is orthogonal


# --- evaluate() -----------------------------------------------------------------------------------------


def test_default_metrics_without_vectors_report_unavailable(hub_open):
    responses = [p.references[0] for p in hub_open.prompts]
    report = evaluate(hub_open, responses)
    outcomes = {o.metric: o for o in report.outcomes}
    assert outcomes["embedding-average"].result is None
    assert "no word vectors configured" in outcomes["embedding-average"].unavailable
    assert outcomes["embedding-average"].to_dict() == {
        "metric": "embedding-average",
        "unavailable": outcomes["embedding-average"].unavailable,
    }
    assert outcomes["distinct-1"].result is not None


def test_explicit_embedding_metric_without_vectors_is_an_error(hub_open):
    responses = [p.references[0] for p in hub_open.prompts]
    with pytest.raises(ConfigurationError, match="no word vectors configured"):
        evaluate(hub_open, responses, metrics=["embedding-average"])


def test_evaluate_with_vectors_scores(hub_open, tmp_path):
    # vectors for every word of the shipped references: a response equal to its first reference scores 1.
    words = sorted({w for p in hub_open.prompts for ref in p.references for w in ref.lower().split()})
    rng = np.random.default_rng(7)
    kv = KeyedVectors(vector_size=4)
    kv.add_vectors(words, rng.normal(size=(len(words), 4)).astype(np.float32))
    path = tmp_path / "v.txt"
    kv.save_word2vec_format(str(path), binary=False)
    responses = [p.references[0] for p in hub_open.prompts]
    report = evaluate(hub_open, responses, metrics=["embedding-average"], compat="chateval-2019", embeddings=str(path))
    result = report.outcomes[0].result
    assert result is not None
    for value, prompt in zip(result.per_prompt, hub_open.prompts, strict=True):
        if any(w in kv.key_to_index for w in prompt.references[0].split(" ")):
            assert value == pytest.approx(1.0, abs=1e-9)


# --- a numpy re-implementation on the real NCM data -----------------------------------------------------


def numpy_embedding_average(responses, references, kv: KeyedVectors, how: str) -> list[float | None]:
    def mean_vector(text: str):
        known = [kv[w].astype(np.float64) for w in text.split() if w in kv.key_to_index]
        return np.mean(known, axis=0) if known else None

    scores: list[float | None] = []
    for response, refs in zip(responses, references, strict=True):
        ref_vectors = [v for v in (mean_vector(r) for r in refs) if v is not None]
        if not ref_vectors:
            scores.append(None)
            continue
        hyp = mean_vector(response)
        if hyp is None:
            scores.append(0.0)
            continue
        cosines = [float(np.dot(hyp, v) / (np.linalg.norm(hyp) * np.linalg.norm(v))) for v in ref_vectors]
        scores.append(max(cosines) if how == "max" else sum(cosines) / len(cosines))
    return scores


@pytest.mark.parametrize("how", ["max", "mean"])
@pytest.mark.parametrize("system", ["cakechat", "ncm_original", "opennmt_seq2seq", "parlai_seq2seq_personachat"])
def test_ncm_matches_numpy_reimplementation(shared_data, ncm_dataset, tmp_path, system, how):
    from evaluation.responses import read_responses

    # allow_empty: the original opennmt_seq2seq file has one empty response (line 178)
    path = shared_data / "responses" / f"ncm__{system}.txt"
    responses = read_responses(path, dataset=ncm_dataset, allow_empty=True)
    references = ncm_dataset.references
    vocabulary = sorted({w for text in [*responses, *(r for refs in references for r in refs)] for w in text.split()})
    # every third word is left out of the vectors, so OOV handling is exercised on real text
    words = vocabulary[::3] + vocabulary[1::3]
    rng = np.random.default_rng(2019)
    kv = KeyedVectors(vector_size=16)
    kv.add_vectors(words, rng.normal(size=(len(words), 16)).astype(np.float32))
    path = save_all_formats(kv, tmp_path / "ncm-vectors")["native"]
    expected = numpy_embedding_average(responses, references, kv, how)
    result = embedding(path, responses, references, tokenizer="none", multi_reference=how)
    assert len(result.per_prompt) == 200
    for i, (got, want) in enumerate(zip(result.per_prompt, expected, strict=True)):
        if want is None:
            assert got is None, f"prompt {i}"
        else:
            assert got == pytest.approx(want, abs=1e-9), f"prompt {i}"
    scored = [v for v in expected if v is not None]
    assert result.corpus == pytest.approx(sum(scored) / len(scored), abs=1e-9)
    assert result.details["prompts_left_out"] == expected.count(None)
