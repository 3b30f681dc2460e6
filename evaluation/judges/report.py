"""A judge's report card on one dataset: position consistency, agreement with the human majority, preference for
the longer response beside the humans' own, and coverage; from a judge file and a human ratings file.

JSON shape (`ReportCard.to_dict()`, what `chateval judge report --json` prints and a hub page can render):

    {"kind": "judge-report-card", "version": "1", "signature": str, "judge": rater, "dataset": str, "level": 0.95,
     "systems": [{"system": identity, "name": str}],           # the systems the judge compared
     "coverage": {"pairs": n, "auto_ties": n, "asked": n, "graded": n, "ungraded": n, "share_graded": x | null,
                  "unparseable_answers": n, "failed_calls": n},
     "position_consistency": Proportion,                       # graded pairs whose verdict survives the swap
     "human_agreement": {"items": n, "human_items": n, "human_items_not_graded": n, "judge_items_without_humans": n,
                         "agreement": Proportion, "cohen_kappa": x | null,
                         "confusion": {"labels": ["A", "tie", "B"], "counts": [[n]*3]*3}},
                         # confusion: rows the judge, columns the humans; A is the judge file's system_a
     "length_preference": {"judge": Proportion, "humans": Proportion, "judge_all_items": Proportion,
                           "difference": x | null}}
    Proportion = {"count": k, "n": n, "share": k / n | null, "interval": [low, high] | null}  # Wilson, at `level`

An item is a (prompt, unordered pair of systems). The human majority is the plurality of the included human
judgements of an item (excluded and held-out raters left out, automatic ties left out), "tie" when the top count is
shared. Agreement and kappa (Cohen's, unweighted, over A / tie / B) use the items the judge graded and humans
judged, automatic ties left out. The length preference is the share of non-tie decisions that go to the response
with more whitespace tokens (items of equal length left out): the judge's combined verdicts and the humans'
majorities on those same items, and the judge over every item it graded. Intervals treat items as independent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from evaluation.agreement import weighted_cohen_kappa
from evaluation.errors import InvalidInputError
from evaluation.judgements import Judgements
from evaluation.judges.files import JudgeFile, JudgeRecord
from evaluation.pairwise_results import OUTCOMES, wilson_interval

VERSION = "1"
_FROM_CODE = {1: "A", 0: "tie", -1: "B"}
_FLIP = {"A": "B", "B": "A", "tie": "tie"}
Item = tuple[str, frozenset[str]]


@dataclass(frozen=True)
class Proportion:
    count: int
    n: int
    share: float | None
    interval: tuple[float, float] | None

    @classmethod
    def of(cls, count: int, n: int, level: float) -> Proportion:
        return cls(count, n, count / n if n else None, wilson_interval(count, n, level))


@dataclass(frozen=True)
class ReportCard:
    judge: str
    dataset: str
    level: float
    systems: list[dict[str, str]]
    coverage: dict[str, Any]
    position_consistency: Proportion
    human_agreement: dict[str, Any]
    length_preference: dict[str, Any]

    @property
    def signature(self) -> str:
        return (
            f"judge-report|v{VERSION}|items=prompt+system-pair|majority=plurality,shared-top=tie|"
            f"kappa=cohen-unweighted-A/tie/B|ci=wilson|level={self.level}|length=whitespace-tokens"
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        _lists(data)
        return {"kind": "judge-report-card", "version": VERSION, "signature": self.signature, **data}


def _lists(value: Any) -> None:
    """Intervals as JSON lists, in place."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "interval" and isinstance(item, tuple):
                value[key] = list(item)
            else:
                _lists(item)


def _shown(labels: Iterable[str], limit: int = 8) -> str:
    labels = sorted(labels)
    return ", ".join(labels[:limit]) + (f" ... ({len(labels)} in all)" if len(labels) > limit else "")


def _judge_dataset(judge: JudgeFile, dataset: str | None) -> tuple[str, list[JudgeRecord]]:
    names = sorted({r.dataset for r in judge.records})
    if dataset is None:
        if len(names) > 1:
            raise InvalidInputError(f"the judge file holds several datasets ({', '.join(names)}); choose one")
        dataset = names[0]
    records = [r for r in judge.records if r.dataset == dataset]
    if not records:
        raise InvalidInputError(f"the judge file has no judgements for dataset {dataset!r} (it has {_shown(names)})")
    return dataset, records


def _human_dataset(human: Judgements, dataset: str) -> Judgements:
    if any(rater.startswith("judge:") for rater in human.raters):
        raise InvalidInputError("the human file holds judge judgements (rater 'judge:...'); give human ratings only")
    if dataset in human.datasets:
        human = human.for_dataset(dataset)
    elif human.datasets != ("",):
        raise InvalidInputError(
            f"the human file has no judgements for dataset {dataset!r} (it has {_shown(human.datasets)})"
        )
    prefix = f"{human.datasets[0]}/" if human.datasets and human.datasets[0] else None
    if prefix and all(p.startswith(prefix) for p in human.prompts):  # labels qualified with the dataset
        human = replace(human, prompts=tuple(p.removeprefix(prefix) for p in human.prompts))
    return human


def _human_keys(human: Judgements, by_id: bool) -> list[str]:
    """The key of each human system: its identity when both files carry ids, else its (unique) name."""
    if by_id:
        return list(human.systems)
    names = list(human.system_names)
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise InvalidInputError(
            f"the judge file names systems without ids and the human file has several systems named {_shown(doubled)}"
        )
    return names


def _human_majorities(human: Judgements, keys: list[str]) -> dict[Item, tuple[str, str, str]]:
    """item -> (system_a key, system_b key, majority from system_a's side), over included, shown judgements."""
    votes: dict[Item, Counter[str]] = {}
    sides: dict[Item, tuple[str, str]] = {}
    for a, b, p, outcome, auto, excluded in zip(
        human.system_a.tolist(),
        human.system_b.tolist(),
        human.prompt.tolist(),
        human.outcome.tolist(),
        human.auto_tie.tolist(),
        human.excluded.tolist(),
        strict=True,
    ):
        if auto or excluded:
            continue
        item = (human.prompts[p], frozenset((keys[a], keys[b])))
        first = sides.setdefault(item, (keys[a], keys[b]))
        label = _FROM_CODE[outcome]
        votes.setdefault(item, Counter())[label if first[0] == keys[a] else _FLIP[label]] += 1
    majorities = {}
    for item, counts in votes.items():
        (top, top_count), *rest = counts.most_common()
        shared = any(count == top_count for _, count in rest)
        majorities[item] = (*sides[item], "tie" if shared else top)
    return majorities


def _check_overlap(judged: dict[Item, JudgeRecord], humans: dict[Item, Any], human_systems: set[str]) -> None:
    """Refuse files that share no item, naming what is missing: systems, pairs of systems, or prompts."""
    if judged.keys() & humans.keys():
        return
    judge_systems = {s for _, pair in judged for s in pair}
    if not judge_systems & human_systems:
        raise InvalidInputError(
            f"the judge and human files share no system: the judge compared {_shown(judge_systems)}; "
            f"the humans judged {_shown(human_systems)}"
        )
    judge_pairs = {pair for _, pair in judged}
    human_pairs = {pair for _, pair in humans}
    if not judge_pairs & human_pairs:
        describe = lambda pairs: _shown(" vs ".join(sorted(pair)) for pair in pairs)  # noqa: E731
        raise InvalidInputError(
            f"the judge and human files share no pair of systems: the judge compared {describe(judge_pairs)}; "
            f"the humans compared {describe(human_pairs)}"
        )
    raise InvalidInputError(
        "the judge and human files share no prompt for the same pair of systems: the judge's prompts are "
        f"{_shown({p for p, _ in judged})}; the humans' are {_shown({p for p, _ in humans})}"
    )


def _longer_share(decisions: Sequence[tuple[str, int, int]], level: float) -> Proportion:
    """Share of non-tie decisions (verdict from system_a's side, tokens of a and b) won by the longer response."""
    decided = [(v, a, b) for v, a, b in decisions if v != "tie" and a != b]
    longer = sum(1 for v, a, b in decided if (v == "A") == (a > b))
    return Proportion.of(longer, len(decided), level)


def report_card(human: Judgements, judge: JudgeFile, *, dataset: str | None = None, level: float = 0.95) -> ReportCard:
    """The report card of `judge` on one dataset (the judge file's only one when None), against `human`."""
    if not 0 < level < 1:
        raise InvalidInputError(f"level must be between 0 and 1, got {level}")
    dataset, records = _judge_dataset(judge, dataset)
    human = _human_dataset(human, dataset)
    by_id = judge.keyed_by_id and human.keyed_by_id
    keys = _human_keys(human, by_id)

    def key(record: JudgeRecord, side: str) -> str:
        return getattr(record, side) if by_id else getattr(record, "name_" + side[-1])

    judged: dict[Item, JudgeRecord] = {}
    for record in records:
        judged.setdefault((record.prompt_id, frozenset((key(record, "system_a"), key(record, "system_b")))), record)
    majorities = _human_majorities(human, keys)
    if not majorities:
        raise InvalidInputError(
            f"the human file has no included judgement for dataset {dataset!r} (all excluded, held out or automatic "
            "ties)"
        )
    _check_overlap(judged, majorities, set(keys))

    asked = [r for r in judged.values() if not r.auto_tie]
    graded = [r for r in asked if r.outcome is not None]
    states = [s for r in asked for s in (r.order_ab, r.order_ba)]
    coverage = {
        "pairs": len(judged),
        "auto_ties": len(judged) - len(asked),
        "asked": len(asked),
        "graded": len(graded),
        "ungraded": len(asked) - len(graded),
        "share_graded": len(graded) / len(asked) if asked else None,
        "unparseable_answers": states.count("unparseable"),
        "failed_calls": states.count("error"),
    }
    consistency = Proportion.of(sum(1 for r in graded if r.order_ab == r.order_ba), len(graded), level)

    judge_labels: list[str] = []
    human_labels: list[str] = []
    judge_len: list[tuple[str, int, int]] = []
    human_len: list[tuple[str, int, int]] = []
    for item, (a, _b, majority) in majorities.items():
        pair = judged.get(item)
        if pair is None or pair.auto_tie or pair.outcome is None:
            continue
        humans_say = majority if key(pair, "system_a") == a else _FLIP[majority]  # on the judge's sides
        judge_labels.append(pair.outcome)
        human_labels.append(humans_say)
        judge_len.append((pair.outcome, pair.tokens_a, pair.tokens_b))
        human_len.append((humans_say, pair.tokens_a, pair.tokens_b))
    confusion = [[0] * 3 for _ in OUTCOMES]
    for j, h in zip(judge_labels, human_labels, strict=True):
        confusion[OUTCOMES.index(j)][OUTCOMES.index(h)] += 1
    agree = sum(1 for j, h in zip(judge_labels, human_labels, strict=True) if j == h)
    kappa = weighted_cohen_kappa(judge_labels, human_labels, weights=None) if judge_labels else None
    judge_share = _longer_share(judge_len, level)
    human_share = _longer_share(human_len, level)
    systems = {key(r, side): getattr(r, "name_" + side[-1]) for r in records for side in ("system_a", "system_b")}
    return ReportCard(
        judge=judge.rater,
        dataset=dataset,
        level=level,
        systems=[{"system": s, "name": systems[s]} for s in sorted(systems)],
        coverage=coverage,
        position_consistency=consistency,
        human_agreement={
            "items": len(judge_labels),
            "human_items": len(majorities),
            "human_items_not_graded": len(majorities) - len(judge_labels),
            "judge_items_without_humans": sum(1 for item in judged if item not in majorities),
            "agreement": Proportion.of(agree, len(judge_labels), level),
            "cohen_kappa": kappa,
            "confusion": {"labels": list(OUTCOMES), "counts": confusion},
        },
        length_preference={
            "judge": judge_share,
            "humans": human_share,
            "judge_all_items": _longer_share([(r.outcome or "tie", r.tokens_a, r.tokens_b) for r in graded], level),
            "difference": (
                judge_share.share - human_share.share
                if judge_share.share is not None and human_share.share is not None
                else None
            ),
        },
    )
