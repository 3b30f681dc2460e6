"""Datasets held as plain columns and the log-likelihood reader's fast path give what the per-line readers give."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from evaluation import loglik
from evaluation.dataset import Prompt, PromptTable, Turn, load_dataset_dir, write_dataset
from evaluation.errors import InvalidInputError

META = dict(name="cols", version="1", description="", source="", license="", citation="")


def make_prompts(n: int, rng: random.Random) -> list[Prompt]:
    prompts = []
    for i in range(n):
        turns = [Turn(role="user", content=f"q{i} ü {rng.random()}")]
        if i % 3 == 0:
            turns = [Turn(role="system", content="be brief"), Turn(role="assistant", content="hi"), *turns]
        refs = tuple(f"r{i}-{k} {rng.random()}" for k in range(1 + i % 2))
        prompts.append(Prompt(id=f"p{i:03d}", context=tuple(turns), references=refs))
    return prompts


def test_a_dataset_read_as_columns_gives_back_the_prompts_written(tmp_path):
    prompts = make_prompts(60, random.Random(1))
    data = write_dataset(tmp_path / "cols", META, prompts)
    assert isinstance(data.prompts, PromptTable)
    assert list(data.prompts) == prompts and data.prompts == prompts and data.prompts == tuple(prompts)
    assert data.prompts[7] == prompts[7] and data.prompts[-1] == prompts[-1]
    assert data.prompts[2:5] == tuple(prompts[2:5]) and data.prompts[::-7] == tuple(prompts[::-7])
    assert data.prompt_ids == tuple(p.id for p in prompts)
    assert data.references == tuple(p.references for p in prompts)
    assert data.prompts.index(prompts[9]) == 9 and prompts[4] in data.prompts
    assert load_dataset_dir(tmp_path / "cols").prompts == data.prompts
    assert PromptTable.of(prompts) == data.prompts and hash(PromptTable.of(prompts)) == hash(data.prompts)
    with pytest.raises(IndexError):
        data.prompts[60]


def write_loglik(path, rows, blank_every=0):
    with path.open("w") as handle:
        for k, row in enumerate(rows):
            handle.write(json.dumps(row) + "\n")
            if blank_every and k % blank_every == 0:
                handle.write("\n")


def both_readers(path, data):
    fast = loglik.read_loglik(path, dataset=data)
    clean, loglik._parse_clean = loglik._parse_clean, lambda *_: None
    try:
        slow = loglik.read_loglik(path, dataset=data)
    finally:
        loglik._parse_clean = clean
    return fast, slow


@pytest.mark.parametrize("seed", range(6))
def test_loglik_fast_path_equals_the_line_by_line_reader(tmp_path, seed):
    rng = random.Random(seed)
    data = write_dataset(tmp_path / "cols", META, make_prompts(200, rng))
    rows = [
        {
            "prompt_id": pid,
            "logprob": rng.choice([-rng.random() * 50, -rng.randint(0, 9), -0.0]),
            "tokens": rng.randint(1, 99),
        }
        for pid in data.prompt_ids
    ]
    if seed % 2:
        rng.shuffle(rows)
    write_loglik(tmp_path / "ll.jsonl", rows, blank_every=seed)
    fast, slow = both_readers(tmp_path / "ll.jsonl", data)
    assert np.array_equal(fast.logprob, slow.logprob) and np.array_equal(fast.tokens, slow.tokens)
    by_id = {row["prompt_id"]: row for row in rows}
    assert fast.logprob.tolist() == [float(by_id[pid]["logprob"]) for pid in data.prompt_ids]
    assert fast.tokens.tolist() == [by_id[pid]["tokens"] for pid in data.prompt_ids]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tokens": True}, "'tokens' is True"),
        ({"tokens": 0}, "'tokens' is 0"),
        ({"tokens": 10**30}, "'tokens' is 1000000000000000000000000000000"),
        ({"logprob": "-1"}, "'logprob' must be a finite number"),
        ({"logprob": 0.5}, "'logprob' is 0.5"),
        ({"logprob": float("nan")}, "'logprob' must be a finite number"),
        ({"prompt_id": "nope"}, "unknown prompt_id 'nope'"),
        ({"prompt_id": "p000"}, "duplicate prompt_id 'p000' (first on line 1)"),
        ({"extra": 1}, None),  # accepted by both readers
        ({"prompt_id": 5}, "unknown prompt_id '5'"),
    ],
)
def test_loglik_lines_the_fast_path_refuses_get_the_line_by_line_error(tmp_path, change, message):
    data = write_dataset(tmp_path / "cols", META, make_prompts(20, random.Random(3)))
    rows = [{"prompt_id": pid, "logprob": -1.5, "tokens": 3} for pid in data.prompt_ids]
    rows[12] = {**rows[12], **change}
    write_loglik(tmp_path / "ll.jsonl", rows)
    if message is None:
        fast, slow = both_readers(tmp_path / "ll.jsonl", data)
        assert np.array_equal(fast.logprob, slow.logprob) and np.array_equal(fast.tokens, slow.tokens)
        return
    with pytest.raises(InvalidInputError) as refused:
        loglik.read_loglik(tmp_path / "ll.jsonl", dataset=data)
    assert message in str(refused.value) and "line 13" in str(refused.value)
