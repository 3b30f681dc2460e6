"""Which pairs a judge is asked about: every system pair (or each system against a baseline) on a dataset, or each
distinct item of a human experiment's ratings, with the responses matched to the judged systems."""

from __future__ import annotations

import pytest

from evaluation.errors import InvalidInputError
from evaluation.judgements import from_records
from evaluation.judges.pairs import SystemRef, dataset_pairs, parse_system, ratings_pairs


def texts(hub_open, tag):
    return [f"{tag} {i}" for i in range(len(hub_open))]


@pytest.mark.parametrize(
    ("label", "system"),
    [("echo", SystemRef("echo")), ("echo#12", SystemRef("echo", 12)), ("C#bot", SystemRef("C#bot")),
     (" my bot#7 ", SystemRef("my bot", 7)), ("a#b#3", SystemRef("a#b", 3))],
)  # fmt: skip
def test_parse_system(label, system):
    assert parse_system(label) == system


@pytest.mark.parametrize("label", ["", "x" * 121, "tab\there", "big#" + "9" * 19])
def test_parse_system_refuses(label):
    with pytest.raises(InvalidInputError, match="system"):
        parse_system(label)


def test_every_pair_or_against_a_baseline(hub_open):
    x, y, z = SystemRef("x", 1), SystemRef("y", 2), SystemRef("z", 3)
    responses = {x: texts(hub_open, "x"), y: texts(hub_open, "y"), z: texts(hub_open, "z")}
    pairs = dataset_pairs(hub_open, responses)
    assert len(pairs) == 3 * 120
    assert sorted({(p.system_a.name, p.system_b.name) for p in pairs}) == [("x", "y"), ("x", "z"), ("y", "z")]
    first = pairs[0]
    assert (first.prompt_id, first.response_a, first.response_b) == ("hov1-001", "x 0", "y 0")
    assert first.context == hub_open.prompts[0].context and first.dataset_fingerprint == hub_open.fingerprint
    against = dataset_pairs(hub_open, responses, baseline=parse_system("z"))
    assert sorted({(p.system_a.name, p.system_b.name) for p in against}) == [("z", "x"), ("z", "y")]
    with pytest.raises(InvalidInputError, match=r"baseline w is not one of the systems given: x \(#1\), y \(#2\)"):
        dataset_pairs(hub_open, responses, baseline=SystemRef("w"))
    with pytest.raises(InvalidInputError, match="at least two systems"):
        dataset_pairs(hub_open, {x: texts(hub_open, "x")})
    with pytest.raises(InvalidInputError, match=r"responses of y \(#2\): 3 for the 120 prompts of hub-open-v1"):
        dataset_pairs(hub_open, {x: texts(hub_open, "x"), y: ["a", "b", "c"]})
    with pytest.raises(InvalidInputError, match=r"systems x \(#1\) have hub ids and w not"):
        dataset_pairs(hub_open, {x: texts(hub_open, "x"), SystemRef("w"): texts(hub_open, "w")})


def ratings(rows, ids=False):
    records = []
    for prompt, a, b in rows:
        record = {"prompt_id": prompt, "system_a": a, "system_b": b, "outcome": "A", "dataset": "hub-open-v1"}
        if ids:
            record.update(system_a_id={"x": 1, "y": 2, "z": 3}[a], system_b_id={"x": 1, "y": 2, "z": 3}[b])
        records.append(record)
    return from_records(records)


def test_distinct_items_of_a_human_experiment(hub_open):
    judged = ratings(
        [("hov1-003", "x", "y"), ("hov1-003", "y", "x"), ("hov1-003", "x", "y"), ("hov1-001", "y", "x"),
         ("hov1-001", "x", "z")]
    )  # fmt: skip
    responses = {SystemRef(s): texts(hub_open, s) for s in "xyz"}
    pairs = ratings_pairs(judged, hub_open, responses)
    assert [(p.prompt_id, p.system_a.name, p.system_b.name) for p in pairs] == [
        ("hov1-003", "x", "y"),  # once, oriented as first judged
        ("hov1-001", "y", "x"),
        ("hov1-001", "x", "z"),
    ]
    assert (pairs[1].response_a, pairs[1].response_b) == ("y 0", "x 0")
    with pytest.raises(InvalidInputError, match=r"no responses for judged system\(s\) z \(given: x, y\)"):
        ratings_pairs(judged, hub_open, {SystemRef(s): texts(hub_open, s) for s in "xy"})
    unknown = ratings([("nope", "x", "y"), ("hov1-001", "x", "y")])
    with pytest.raises(InvalidInputError, match=r"1 judged prompt.* not in dataset hub-open-v1: 'nope'"):
        ratings_pairs(unknown, hub_open, responses)


def test_hub_ids_of_the_ratings_file_are_carried_and_matched(hub_open):
    judged = ratings([("hov1-002", "x", "y"), ("hov1-002", "y", "z")], ids=True)
    responses = {SystemRef("x", 1): texts(hub_open, "x"), SystemRef("y"): texts(hub_open, "y"),
                 SystemRef("renamed", 3): texts(hub_open, "z")}  # fmt: skip
    pairs = ratings_pairs(judged, hub_open, responses)
    assert [(p.system_a, p.system_b) for p in pairs] == [
        (SystemRef("x", 1), SystemRef("y", 2)),  # y given by name: takes the file's id
        (SystemRef("y", 2), SystemRef("renamed", 3)),  # matched by id whatever the name
    ]
    assert pairs[1].response_b == "z 1"
    with pytest.raises(InvalidInputError, match=r"no responses for judged system\(s\) z \(#3\)"):
        ratings_pairs(judged, hub_open, {SystemRef("x", 1): texts(hub_open, "x"), SystemRef("y"): texts(hub_open, "y")})
