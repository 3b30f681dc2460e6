"""py-irt (Lalor and Rodriguez) as the reference fit: pairwise judgements recoded as 2PL subject-item responses.

Recoding: subject = system pair "A|B" (A before B in the judgements' system order, so both orientations of a pair
share one subject), item = prompt, response = 1 when A won and 0 when B won; ties and automatic ties are dropped
(a 2PL has two outcomes) and so are excluded judgements. The 2PL logit a_k (theta_AB - b_k) then plays the role
of the fast model's a_k (t_A - t_B): a prompt that separates systems has a large a_k in both. Repeated responses
of one subject to one item go on separate lines of py-irt's JSON-lines format, which py-irt accepts.

py-irt needs torch and Python < 3.12; it is an optional extra, imported only when a fit is asked for.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.errors import ConfigurationError
from evaluation.judgements import Judgements

INSTALL_HINT = "pip install 'chateval-hub[irt]' (install torch==2.13.0 first so pip does not fetch CUDA wheels)"


@dataclass
class PyIrtResult:
    """A py-irt 2PL fit mapped back onto the judgements' labels (NaN for prompts with no decisive judgement)."""

    prompts: tuple[str, ...]
    discrimination: np.ndarray  # (n_prompts,) exp(loc_slope), aligned with prompts
    difficulty: np.ndarray  # (n_prompts,) loc_diff
    subjects: tuple[str, ...]  # "A|B"
    subject_ability: np.ndarray  # (n_subjects,) theta of each pair
    n_responses: int
    seconds: float  # recoding + training + export, wall clock
    train_seconds: float
    signature: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PyIrtData:
    """Judgements recoded for py-irt: one row per decisive judgement."""

    subjects: tuple[str, ...]
    subject: np.ndarray  # (n,) index into subjects
    prompt: np.ndarray  # (n,) index into the judgements' prompts
    response: np.ndarray  # (n,) 1 = A won, 0 = B won

    def records(self, prompts: tuple[str, ...]) -> list[dict[str, Any]]:
        """py-irt's JSON-lines records; the k-th repeat of a (subject, prompt) response goes on the k-th line."""
        order = np.lexsort((self.prompt, self.subject))
        subject, prompt, response = self.subject[order], self.prompt[order], self.response[order]
        new_cell = np.ones(len(order), dtype=bool)
        new_cell[1:] = (subject[1:] != subject[:-1]) | (prompt[1:] != prompt[:-1])
        cell_start = np.maximum.accumulate(np.where(new_cell, np.arange(len(order)), 0))
        repeat = np.arange(len(order)) - cell_start
        lines: dict[tuple[int, int], dict[str, int]] = {}
        for s, p, r, k in zip(subject.tolist(), prompt.tolist(), response.tolist(), repeat.tolist(), strict=True):
            lines.setdefault((s, k), {})[prompts[p]] = r
        return [{"subject_id": self.subjects[s], "responses": resp} for (s, _), resp in sorted(lines.items())]


def recode(j: Judgements) -> PyIrtData:
    """Decisive, non-excluded human judgements as (pair subject, prompt item, A-won response) rows."""
    keep = ~j.excluded & ~j.auto_tie & (j.outcome != 0)
    a, b, outcome = j.system_a[keep], j.system_b[keep], j.outcome[keep]
    swap = a > b
    low, high = np.where(swap, b, a).astype(np.int64), np.where(swap, a, b).astype(np.int64)
    response = ((outcome == 1) != swap).astype(np.int64)
    pair_key = low * len(j.systems) + high
    unique, subject = np.unique(pair_key, return_inverse=True)
    names = [f"{j.systems[k // len(j.systems)]}|{j.systems[k % len(j.systems)]}" for k in unique.tolist()]
    if len(set(names)) < len(names):  # a system name containing "|" made two pairs look alike
        names = [f"{k // len(j.systems)}|{k % len(j.systems)}" for k in unique.tolist()]
    return PyIrtData(tuple(names), subject.astype(np.int64), j.prompt[keep].astype(np.int64), response)


def write_jsonlines(j: Judgements, path: str | Path) -> Path:
    """Write the recoded judgements in py-irt's format, so `py-irt train 2pl PATH OUT` reproduces a fit."""
    path = Path(path)
    with path.open("w", encoding="utf-8") as handle:
        for record in recode(j).records(j.prompts):
            handle.write(json.dumps(record) + "\n")
    return path


def _import_pyirt() -> tuple[Any, Any, Any, Any, Any]:
    try:
        import pyro
        import torch
        from py_irt.config import IrtConfig
        from py_irt.dataset import Dataset
        from py_irt.training import IrtModelTrainer
    except ImportError as exc:
        raise ConfigurationError(f"py-irt is not installed ({exc}); {INSTALL_HINT}") from exc
    # The first optimiser torch builds imports its compiler stack (seconds); do it here so fit times exclude it.
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    return pyro, torch, IrtConfig, Dataset, IrtModelTrainer


@contextlib.contextmanager
def _seeded(pyro: Any, torch: Any, seed: int) -> Any:
    """Seed torch, numpy and random for one fit (pyro.set_rng_seed), restoring the callers' generator states."""
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    pyro.set_rng_seed(seed)
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])


def fit_pyirt(
    j: Judgements,
    *,
    epochs: int = 2000,
    seed: int = 0,
    priors: str = "hierarchical",
    lr: float = 0.1,
    lr_decay: float = 0.9999,
) -> PyIrtResult:
    """Fit py-irt's `2pl` (hierarchical priors, SVI with Adam on the CPU, seeded) to the recoded judgements.

    Discrimination and difficulty come back aligned with j.prompts; prompts without a decisive judgement are NaN.
    Raises ConfigurationError when py-irt (or torch) is not installed.
    """
    pyro, torch, IrtConfig, Dataset, IrtModelTrainer = _import_pyirt()
    started = time.perf_counter()
    data = recode(j)
    if len(data.response) == 0:
        raise ConfigurationError("py-irt needs at least one decisive (non-tie) judgement")
    config = IrtConfig(model_type="2pl", priors=priors, epochs=epochs, lr=lr, lr_decay=lr_decay, seed=seed)
    with tempfile.TemporaryDirectory() as tmp, _seeded(pyro, torch, seed), contextlib.redirect_stdout(io.StringIO()):
        path = Path(tmp) / "pyirt.jsonlines"
        with path.open("w", encoding="utf-8") as handle:
            for record in data.records(j.prompts):
                handle.write(json.dumps(record) + "\n")
        dataset = Dataset.from_jsonlines(path)
        trainer = IrtModelTrainer(data_path=path, config=config, dataset=dataset, verbose=False)
        train_started = time.perf_counter()
        trainer.train(device="cpu")
        train_seconds = time.perf_counter() - train_started
    params = trainer.last_params
    discrimination = np.full(len(j.prompts), np.nan)
    difficulty = np.full(len(j.prompts), np.nan)
    prompt_index = {label: i for i, label in enumerate(j.prompts)}
    items = [prompt_index[params["item_ids"][ix]] for ix in range(len(params["item_ids"]))]
    discrimination[items] = params["disc"]
    difficulty[items] = params["diff"]
    subject_index = {label: i for i, label in enumerate(data.subjects)}
    ability = np.full(len(data.subjects), np.nan)
    ability[[subject_index[params["subject_ids"][ix]] for ix in range(len(params["subject_ids"]))]] = params["ability"]
    return PyIrtResult(
        prompts=j.prompts,
        discrimination=discrimination,
        difficulty=difficulty,
        subjects=data.subjects,
        subject_ability=ability,
        n_responses=len(data.response),
        seconds=time.perf_counter() - started,
        train_seconds=train_seconds,
        signature=_signature(config, seed=seed, n_responses=len(data.response)),
    )


def _signature(config: Any, *, seed: int, n_responses: int) -> dict[str, Any]:
    from importlib.metadata import version

    return {
        "reference": "py-irt",
        "recoding": "subject = system pair A|B, item = prompt, response = A won; ties dropped",
        "config": config.model_dump(),
        "seed": seed,
        "device": "cpu",
        "n_responses": n_responses,
        "versions": {name: version(name) for name in ("py-irt", "pyro-ppl", "torch")},
    }
