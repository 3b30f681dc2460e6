"""BLEU-n: mean over prompts of sentence-level, multi-reference BLEU, exactly as sacrebleu computes it.

sacrebleu's `sentence_score` is the definition; this module computes the same sufficient statistics for
all sentences at once with integer-coded n-grams and applies sacrebleu's formula vectorised, so a
100,000-line file takes seconds. tests/test_metric_bleu.py checks it against `sentence_score` itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version

import numpy as np

from evaluation.metrics.base import Metric, MetricCard, MetricInputs, MetricResult, Progress
from evaluation.metrics.ngrams import EncodedCorpus, concatenate, encode_texts, ngram_codes
from evaluation.metrics.registry import register
from evaluation.tokenize import OWN_TOKENIZERS, check_tokenizer

SMOOTH_METHODS = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}  # sacrebleu's default values
MY_LOG_ZERO = -9999999999  # what sacrebleu.utils.my_log returns for 0
CHUNK_PROMPTS = 20_000  # prompts whose n-gram statistics are computed at once (~100 MB of arrays)


@dataclass(frozen=True)
class BleuConfig:
    n: int = 2
    tokenizer: str = "13a"
    lowercase: bool = False
    smooth_method: str = "exp"
    smooth_value: float | None = None
    effective_order: bool = True
    scale: float = 100.0  # sacrebleu reports 0-100; the original ChatEval (NLTK) reported 0-1

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError("n must be at least 1")
        if self.smooth_method not in SMOOTH_METHODS:
            raise ValueError(f"smooth_method must be one of {', '.join(SMOOTH_METHODS)}")
        if self.tokenizer in OWN_TOKENIZERS:
            raise ValueError("BLEU uses sacrebleu tokenizers (13a, intl, char, none)")
        check_tokenizer(self.tokenizer)


@register
class Bleu(Metric):
    family = "bleu"
    version = "1"
    parameter = "n"
    Config = BleuConfig
    card = MetricCard(
        description="Mean over prompts of sentence-level BLEU with maximum n-gram order n against all "
        "references of the prompt (sacrebleu).",
        higher_is_better=True,
        citation="Papineni et al. (2002). BLEU. ACL; Post (2018). A Call for Clarity in Reporting BLEU Scores. WMT.",
        needs=("responses", "references"),
    )

    def library_versions(self) -> dict[str, str]:
        # the installed distribution's version, which sacrebleu.__version__ also reports, without importing it
        return {"sacrebleu": version("sacrebleu")}

    @property
    def resolved_smooth_value(self) -> float | None:
        value = self.config.smooth_value
        return SMOOTH_METHODS[self.config.smooth_method] if value is None else value

    def signature_fields(self) -> dict:
        return {**super().signature_fields(), "smooth_value": self.resolved_smooth_value}

    def compute(self, inputs: MetricInputs, *, progress: Progress | None = None) -> MetricResult:
        config: BleuConfig = self.config
        n = len(inputs.responses)
        joint, ref_owner = encode_sentences(inputs.responses, inputs.references, config)
        first_ref = np.searchsorted(ref_owner, np.arange(n + 1))
        offsets = np.concatenate(([0], np.cumsum(joint.lengths)))  # where each sentence's tokens start, once
        # A prompt's statistics depend on its own sentences only: chunks of prompts bound the n-gram arrays.
        chunks = []
        for start in range(0, n, CHUNK_PROMPTS):
            stop = min(start + CHUNK_PROMPTS, n)
            part = _prompt_range(joint, offsets, n, first_ref, start, stop)
            owner = ref_owner[first_ref[start] : first_ref[stop]] - start
            chunks.append(_statistics(part, stop - start, owner, config))
            if progress:
                progress(stop, n)
        stats = [np.concatenate(parts) for parts in zip(*chunks, strict=True)] if chunks else _no_statistics(config)
        scores = bleu_from_statistics(*stats, config=config, smooth_value=self.resolved_smooth_value)
        scores *= config.scale / 100.0
        return self.result(float(scores.mean()) if len(scores) else 0.0, scores.tolist())


def _no_statistics(config: BleuConfig) -> list[np.ndarray]:
    empty = np.zeros(0, dtype=np.int64)
    return [empty, empty, np.zeros((0, config.n), dtype=np.int64), np.zeros((0, config.n), dtype=np.int64)]


def encode_sentences(responses, references, config: BleuConfig) -> tuple[EncodedCorpus, np.ndarray]:
    """Responses then all references, in one vocabulary, and the prompt of each reference (shape (R,))."""
    ref_owner = np.array([i for i, refs in enumerate(references) for _ in refs], dtype=np.int64)
    flat_refs = [ref for refs in references for ref in refs]
    joint = concatenate(
        encode_texts(responses, config.tokenizer, config.lowercase),
        encode_texts(flat_refs, config.tokenizer, config.lowercase),
    )
    return joint, ref_owner


def _prompt_range(joint: EncodedCorpus, offsets, n_prompts: int, first_ref, start: int, stop: int) -> EncodedCorpus:
    """Responses start..stop-1 then their references, from `joint` (all responses, then all references; sentence i's
    tokens start at offsets[i])."""
    if start == 0 and stop == n_prompts:
        return joint
    rows = [(start, stop), (n_prompts + first_ref[start], n_prompts + first_ref[stop])]
    ids = [joint.ids[offsets[a] : offsets[b]] for a, b in rows]
    lengths = [joint.lengths[a:b] for a, b in rows]
    return EncodedCorpus(ids=np.concatenate(ids), lengths=np.concatenate(lengths), vocab=joint.vocab)


def sentence_statistics(responses, references, config: BleuConfig, *, progress: Progress | None = None):
    """Per sentence: hypothesis length, closest reference length, correct and total n-gram counts.

    Returns (hyp_len (P,), ref_len (P,), correct (P, n), total (P, n)), all int64, P = len(responses).
    """
    joint, ref_owner = encode_sentences(responses, references, config)
    return _statistics(joint, len(responses), ref_owner, config, progress=progress)


def _statistics(joint: EncodedCorpus, n_prompts: int, ref_owner, config: BleuConfig, *, progress=None):
    lengths = joint.lengths
    hyp_len, ref_lens = lengths[:n_prompts], lengths[n_prompts:]
    ref_len = _closest_ref_len(hyp_len, ref_lens, ref_owner)
    # slot of each reference among its prompt's references, and the most references any prompt has
    ref_slot = np.arange(len(ref_owner)) - np.searchsorted(ref_owner, ref_owner)
    slots = int(ref_slot.max()) + 1 if len(ref_slot) else 1
    correct = np.zeros((n_prompts, config.n), dtype=np.int64)
    total = np.maximum(hyp_len[:, None] - np.arange(config.n)[None, :], 0)
    radix = len(joint.vocab) + 1
    for order in range(1, config.n + 1):
        codes, segments = ngram_codes(joint, order, radix=radix)
        width = radix**order if order <= 2 else int(codes.max(initial=0)) + 1
        if width * (n_prompts + 1) * slots >= 2**62:  # keep keys inside int64
            _, codes = np.unique(codes, return_inverse=True)
            width = int(codes.max(initial=0)) + 1
        is_hyp = segments < n_prompts
        hyp_keys, hyp_counts = np.unique(segments[is_hyp] * width + codes[is_hyp], return_counts=True)
        merged_keys, merged_counts = _max_reference_counts(
            codes[~is_hyp], segments[~is_hyp] - n_prompts, ref_owner, ref_slot, width, slots
        )
        # A sentinel key past every real one keeps searchsorted in range; it never matches.
        merged_keys = np.append(merged_keys, np.iinfo(np.int64).max)
        merged_counts = np.append(merged_counts, 0)
        position = np.searchsorted(merged_keys, hyp_keys)
        found = merged_keys[position] == hyp_keys
        clipped = np.where(found, np.minimum(hyp_counts, merged_counts[position]), 0)
        per_sentence = np.bincount(hyp_keys // width, weights=clipped, minlength=n_prompts)
        correct[:, order - 1] = per_sentence.astype(np.int64)
        if progress:
            progress(order, config.n)
    return hyp_len, ref_len, correct, total


def _max_reference_counts(codes, ref_index, ref_owner, ref_slot, width: int, slots: int):
    """Per (prompt, n-gram): the largest count of that n-gram in any one reference of the prompt.

    Returns sorted keys prompt * width + code and their counts. One sort: keys carry the reference's slot
    in the lowest digit, so the counts of one (prompt, n-gram) over its references sit side by side.
    """
    keys, counts = np.unique((ref_owner[ref_index] * width + codes) * slots + ref_slot[ref_index], return_counts=True)
    if not len(keys):
        return keys, counts
    prompt_keys = keys // slots
    starts = np.flatnonzero(np.r_[True, prompt_keys[1:] != prompt_keys[:-1]])
    return prompt_keys[starts], np.maximum.reduceat(counts, starts)


def _closest_ref_len(hyp_len: np.ndarray, ref_lens: np.ndarray, ref_owner: np.ndarray) -> np.ndarray:
    """sacrebleu's rule: the reference length closest to the hypothesis length, the shorter on a tie."""
    best = np.full(len(hyp_len), np.iinfo(np.int64).max, dtype=np.int64)
    if len(ref_lens):
        key = np.abs(hyp_len[ref_owner] - ref_lens) * (1 << 31) + ref_lens
        np.minimum.at(best, ref_owner, key)
    no_reference = best == np.iinfo(np.int64).max
    return np.where(no_reference, 0, best % (1 << 31))


def bleu_from_statistics(hyp_len, ref_len, correct, total, *, config: BleuConfig, smooth_value):
    """sacrebleu's `BLEU.compute_bleu`, step for step, over arrays of sentences. Returns shape (P,), 0-100."""
    correct = correct.astype(np.float64)
    total = total.astype(np.float64)
    hyp = hyp_len.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(hyp < ref_len, np.where(hyp > 0, np.exp(1 - ref_len / np.where(hyp > 0, hyp, 1)), 0.0), 1.0)
    any_match = correct.any(axis=1)
    n = config.n
    precisions = np.zeros_like(correct)
    smooth_mteval = np.ones(len(hyp))
    active = np.ones(len(hyp), dtype=bool)
    eff_order = np.full(len(hyp), n, dtype=np.int64)
    for k in range(n):
        if config.smooth_method == "add-k" and k > 0:
            correct[active, k] += smooth_value
            total[active, k] += smooth_value
        active &= total[:, k] != 0
        if config.effective_order:
            eff_order[active] = k + 1
        zero = active & (correct[:, k] == 0)
        safe_total = np.where(total[:, k] > 0, total[:, k], 1.0)
        if config.smooth_method == "exp":
            smooth_mteval[zero] *= 2
            precisions[zero, k] = 100.0 / (smooth_mteval[zero] * safe_total[zero])
        elif config.smooth_method == "floor":
            precisions[zero, k] = 100.0 * smooth_value / safe_total[zero]
        hit = active & (correct[:, k] != 0)
        precisions[hit, k] = 100.0 * correct[hit, k] / safe_total[hit]
    with np.errstate(divide="ignore"):
        logs = np.where(precisions > 0, np.log(np.where(precisions > 0, precisions, 1.0)), MY_LOG_ZERO)
    log_sum = np.zeros(len(hyp))
    for k in range(n):  # left to right, as Python's sum() in sacrebleu
        log_sum += np.where(k < eff_order, logs[:, k], 0.0)
    scores = bp * np.exp(log_sum / eff_order)
    return np.where(any_match, scores, 0.0)
