"""Items for prediction-powered ranking: one (prompt, system pair) each, with its mean human and judge preference.

A vote on an item is oriented to the pair's lower-indexed system ("A"): 1 = A better, 0.5 = tie, 0 = B better
(ties count as half a win). Several votes on one item (several raters, or the judge's two orders) are averaged,
so the item, not the vote, is the unit of sampling. Items the judge graded make up the population; those a human
also judged are the labelled part, the rest the unlabelled part. Excluded and held-out votes are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from evaluation.errors import InvalidInputError
from evaluation.judgements import Judgements

MIN_HUMAN_ITEMS = 2  # per system pair: a pair's human variance needs two items
SHOWN = 5  # labels quoted in an error message


@dataclass(frozen=True)
class Items:
    """n items over s systems and P system pairs (pair_a[p] < pair_b[p]); shapes in the comments.

    human is NaN on unlabelled items. judge_left_a / judge_left_b: the judge's mean verdict when A (resp. B) was
    shown on the left, NaN when that order was not asked or not known (used by active sampling).
    """

    systems: tuple[str, ...]  # identities: ids as text when the files carry ids, else names
    names: tuple[str, ...]  # display names
    keyed_by_id: bool
    pair_a: np.ndarray  # (P,) int
    pair_b: np.ndarray  # (P,) int
    pair: np.ndarray  # (n,) int, index into pair_a / pair_b
    judge: np.ndarray  # (n,) float in [0, 1]
    human: np.ndarray  # (n,) float in [0, 1] or NaN
    human_votes: np.ndarray  # (n,) int, 0 on unlabelled items
    judge_left_a: np.ndarray = field(default_factory=lambda: np.empty(0))  # (n,) or empty
    judge_left_b: np.ndarray = field(default_factory=lambda: np.empty(0))  # (n,) or empty
    notes: tuple[str, ...] = ()  # what was left out, in words

    @property
    def labelled(self) -> np.ndarray:
        return self.human_votes > 0

    @property
    def n_human_votes(self) -> int:
        return int(self.human_votes.sum())

    def describe(self, index: int) -> str:
        return f"{self.names[index]} (#{self.systems[index]})" if self.keyed_by_id else self.names[index]

    def system_id(self, index: int) -> int | None:
        return int(self.systems[index]) if self.keyed_by_id else None


def _votes(j: Judgements, union: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per vote: (lower system, higher system) in the union's numbering, the A-oriented value, and the order
    (1 = the lower system was on the left, 0 = the higher one was, -1 unknown)."""
    index = np.array([union[s] for s in j.systems], dtype=np.int64)
    a, b = index[j.system_a], index[j.system_b]
    swap = a > b
    value = (1.0 + j.outcome.astype(float)) / 2
    value = np.where(swap, 1.0 - value, value)
    left = j.left_is_a.astype(np.int64)
    order = np.where(left < 0, -1, np.where(swap, 1 - left, left))
    return np.minimum(a, b), np.maximum(a, b), value, order


def _keys(j: Judgements, prompt_index: dict[str, int], lo: np.ndarray, hi: np.ndarray, s: int) -> np.ndarray:
    prompts = np.array([prompt_index[p] for p in j.prompts], dtype=np.int64)[j.prompt]
    return (prompts * s + lo) * s + hi


def _mean_by(keys: np.ndarray, values: np.ndarray, universe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean of values per key of `universe` (sorted unique keys) and the count; NaN / 0 where a key has none."""
    where = np.searchsorted(universe, keys)
    count = np.bincount(where, minlength=len(universe))
    total = np.bincount(where, values, minlength=len(universe))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan), count


def _check_same_identities(human: Judgements, judge: Judgements) -> None:
    if human.keyed_by_id != judge.keyed_by_id:
        which = ("human", "judge") if human.keyed_by_id else ("judge", "human")
        raise InvalidInputError(
            f"the {which[0]} file identifies systems by id (system_a_id, system_b_id) but the {which[1]} file by "
            "name; give both files the same kind of identity"
        )


def _quote(labels: list[str]) -> str:
    shown = ", ".join(repr(x) for x in labels[:SHOWN])
    return shown + (f" and {len(labels) - SHOWN} more" if len(labels) > SHOWN else "")


def _check_overlap(human: Judgements, judge: Judgements) -> None:
    shared_systems = set(human.systems) & set(judge.systems)
    if not shared_systems:
        raise InvalidInputError(
            f"the human and judge files have no system in common: human {_quote(sorted(human.system_names))}, "
            f"judge {_quote(sorted(judge.system_names))}"
        )
    if not set(human.prompts) & set(judge.prompts):
        raise InvalidInputError(
            f"the human and judge files have no prompt in common: human {_quote(sorted(human.prompts))}, "
            f"judge {_quote(sorted(judge.prompts))}"
        )
    missing = sorted(human.system_names[i] for i, s in enumerate(human.systems) if s not in judge.systems)
    if missing:
        raise InvalidInputError(f"the judge file has no vote on system(s) the humans judged: {_quote(missing)}")


def select_judge(judge: Judgements, name: str | None) -> Judgements:
    """The votes of one judge (the `rater` column); several judges in one file need `name`."""
    judge = judge.subset(~judge.excluded).compact()
    if name is not None:
        if name not in judge.raters:
            raise InvalidInputError(f"judge {name!r} is not in the judge file (raters: {_quote(list(judge.raters))})")
        return judge.subset(judge.rater == judge.raters.index(name)).compact()
    if len(judge.raters) > 1:
        raise InvalidInputError(
            f"the judge file holds {len(judge.raters)} judges ({_quote(list(judge.raters))}); "
            "choose one with --judge-name"
        )
    return judge


def paired_items(human: Judgements, judge: Judgements) -> Items:
    """Align human and judge votes item by item (see the module docstring); clear errors when they do not meet.

    System pairs with judge votes but fewer than MIN_HUMAN_ITEMS human-judged items cannot be rectified and are
    left out (said in `notes`); a system left with no pair, or a comparison graph in pieces, is an error.
    """
    human = human.subset(~human.excluded).compact()
    judge = judge.subset(~judge.excluded).compact()
    if len(human) == 0:
        raise InvalidInputError("the human file has no vote left after excluded and held-out ones are dropped")
    if len(judge) == 0:
        raise InvalidInputError("the judge file has no vote left after excluded and held-out ones are dropped")
    _check_same_identities(human, judge)
    _check_overlap(human, judge)
    systems = sorted(set(human.systems) | set(judge.systems), key=lambda x: (not x.isdigit(), x.zfill(20), x))
    union = {s: i for i, s in enumerate(systems)}
    names_by_identity = dict(zip(judge.systems, judge.system_names, strict=True))
    names_by_identity.update(zip(human.systems, human.system_names, strict=True))
    prompts = {p: i for i, p in enumerate(sorted(set(human.prompts) | set(judge.prompts)))}
    s = len(systems)
    h_lo, h_hi, h_value, _ = _votes(human, union)
    j_lo, j_hi, j_value, j_order = _votes(judge, union)
    h_keys, j_keys = _keys(human, prompts, h_lo, h_hi, s), _keys(judge, prompts, j_lo, j_hi, s)
    universe = np.unique(j_keys)
    judged = np.isin(h_keys, universe)
    notes = []
    if not judged.any():
        raise InvalidInputError(
            "no item (prompt and system pair) has both a human and a judge vote: the judge must grade the pairs "
            "the humans judged"
        )
    if not judged.all():
        unmatched = len(np.unique(h_keys[~judged]))
        notes.append(f"{unmatched} human-judged items the judge did not grade were left out")
    h_keys, h_value = h_keys[judged], h_value[judged]
    judge_mean, _ = _mean_by(j_keys, j_value, universe)
    human_mean, human_votes = _mean_by(h_keys, h_value, universe)
    left_a, _ = _mean_by(j_keys[j_order == 1], j_value[j_order == 1], universe)
    left_b, _ = _mean_by(j_keys[j_order == 0], j_value[j_order == 0], universe)
    item_pair_code = universe % (s * s)
    pair_codes, pair = np.unique(item_pair_code, return_inverse=True)
    labelled_per_pair = np.bincount(pair, human_votes > 0, minlength=len(pair_codes))
    keep_pair = labelled_per_pair >= MIN_HUMAN_ITEMS
    pair_a, pair_b = pair_codes // s, pair_codes % s
    if not keep_pair.all():
        dropped = [
            f"{names_by_identity[systems[a]]} vs {names_by_identity[systems[b]]}"
            for a, b in zip(pair_a[~keep_pair], pair_b[~keep_pair], strict=True)
        ]
        notes.append(
            f"{len(dropped)} system pair(s) with judge votes but fewer than {MIN_HUMAN_ITEMS} human-judged items "
            f"were left out: {_quote(dropped)}"
        )
    keep_item = keep_pair[pair]
    new_pair = np.cumsum(keep_pair) - 1
    pair_a, pair_b = pair_a[keep_pair], pair_b[keep_pair]
    _check_systems(systems, names_by_identity, pair_a, pair_b)
    return Items(
        systems=tuple(systems),
        names=tuple(names_by_identity[x] for x in systems),
        keyed_by_id=human.keyed_by_id,
        pair_a=pair_a,
        pair_b=pair_b,
        pair=new_pair[pair[keep_item]],
        judge=judge_mean[keep_item],
        human=human_mean[keep_item],
        human_votes=human_votes[keep_item],
        judge_left_a=left_a[keep_item],
        judge_left_b=left_b[keep_item],
        notes=tuple(notes),
    )


def _check_systems(systems: list[str], names: dict[str, str], pair_a: np.ndarray, pair_b: np.ndarray) -> None:
    s = len(systems)
    compared = np.zeros(s, dtype=bool)
    compared[pair_a] = compared[pair_b] = True
    if not compared.all():
        lonely = [names[systems[i]] for i in np.flatnonzero(~compared)]
        raise InvalidInputError(
            f"system(s) with no human votes on items the judge graded ({MIN_HUMAN_ITEMS} per pair needed): "
            f"{_quote(lonely)}; have humans judge them or leave them out of the judge file"
        )
    check_connected([names[x] for x in systems], pair_a, pair_b)


def check_connected(names: list[str], pair_a: np.ndarray, pair_b: np.ndarray) -> None:
    """Abilities are comparable only within a connected comparison graph; name the pieces otherwise."""
    s = len(names)
    graph = coo_matrix((np.ones(len(pair_a)), (pair_a, pair_b)), shape=(s, s))
    count, labels = connected_components(graph, directed=False)
    if count > 1:
        groups = [_quote([names[i] for i in np.flatnonzero(labels == g)]) for g in range(count)]
        raise InvalidInputError(
            "the comparison graph is disconnected (no chain of human-judged pairs joins these groups, so their "
            f"abilities cannot be compared): {' | '.join(groups)}"
        )
