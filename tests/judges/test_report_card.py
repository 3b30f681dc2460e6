"""The report card on a hand-worked example (every figure computed by hand; intervals by statsmodels, kappa by
scikit-learn), and the clear errors when the judge and human files do not overlap."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from evaluation.errors import InvalidInputError
from evaluation.judgements import from_records
from evaluation.judges.files import JudgeFile, JudgeRecord
from evaluation.judges.report import report_card

RATER = "judge:m|pairwise-v1|host"


def human_rows(votes, dataset="d"):
    """votes: (prompt, system_a, system_b, outcome, extra fields)."""
    rows = []
    for n, (prompt, a, b, outcome, *extra) in enumerate(votes):
        rows.append(
            {
                "prompt_id": prompt,
                "system_a": a,
                "system_b": b,
                "outcome": outcome,
                "rater": f"r{n % 3}",
                "dataset": dataset,
                **(extra[0] if extra else {}),
            }
        )
    return from_records(rows)


def judge_file(records, dataset="d"):
    made = []
    for prompt, a, b, outcome, ab, ba, ta, tb, *auto in records:
        made.append(JudgeRecord(dataset, prompt, a, b, a, b, outcome, bool(auto), ab, ba, ta, tb))
    return JudgeFile(rater=RATER, keyed_by_id=False, records=tuple(made))


HUMANS = [
    ("p1", "x", "y", "A"),
    ("p1", "x", "y", "A"),
    ("p1", "x", "y", "B"),  # majority A
    ("p2", "x", "y", "B"),
    ("p2", "x", "y", "B"),
    ("p2", "x", "y", "tie"),  # B
    ("p3", "x", "y", "tie"),
    ("p3", "x", "y", "tie"),
    ("p3", "x", "y", "A"),  # tie
    ("p4", "x", "y", "A"),
    ("p4", "x", "y", "B"),
    ("p4", "x", "y", "tie"),  # top shared: tie
    ("p5", "x", "y", "A"),
    ("p5", "x", "y", "A"),
    ("p5", "x", "y", "A"),  # A (judge could not grade it)
    ("p5", "x", "y", "B", {"excluded": True}),
    ("p5", "x", "y", "B", {"held_out": True}),  # left out
    ("p6", "y", "x", "B"),
    ("p6", "y", "x", "B"),  # shown as y vs x: x better, so A from x's side
    ("p7", "x", "y", "tie", {"auto_tie": True}),  # identical responses: left out
]
JUDGE = [
    ("p1", "x", "y", "A", "A", "A", 10, 5),
    ("p2", "x", "y", "tie", "A", "B", 3, 8),  # inconsistent
    ("p3", "x", "y", "tie", "tie", "tie", 4, 4),
    ("p4", "x", "y", "B", "B", "B", 2, 9),
    ("p5", "x", "y", None, "unparseable", "A", 6, 1),
    ("p6", "x", "y", "B", "B", "B", 5, 12),
    ("p8", "x", "y", "A", "A", "A", 9, 3),  # no humans
    ("p9", "x", "y", "tie", None, None, 7, 7, "auto"),
]


def wilson(k, n):
    return pytest.approx(list(proportion_confint(k, n, alpha=0.05, method="wilson")), abs=1e-12)


def test_hand_worked_card():
    card = report_card(human_rows(HUMANS), judge_file(JUDGE)).to_dict()
    assert card["kind"] == "judge-report-card" and card["judge"] == RATER and card["dataset"] == "d"
    assert card["systems"] == [{"system": "x", "name": "x"}, {"system": "y", "name": "y"}]
    assert card["coverage"] == {
        "pairs": 8,
        "auto_ties": 1,
        "asked": 7,
        "graded": 6,
        "ungraded": 1,
        "share_graded": 6 / 7,
        "unparseable_answers": 1,
        "failed_calls": 0,
    }
    consistency = card["position_consistency"]
    assert (consistency["count"], consistency["n"], consistency["share"]) == (5, 6, 5 / 6)
    assert consistency["interval"] == wilson(5, 6)
    agreement = card["human_agreement"]
    assert (agreement["items"], agreement["human_items"], agreement["human_items_not_graded"]) == (5, 6, 1)
    assert agreement["judge_items_without_humans"] == 2
    assert (agreement["agreement"]["count"], agreement["agreement"]["n"]) == (2, 5)
    assert agreement["agreement"]["interval"] == wilson(2, 5)
    # judge A tie tie B B against humans A B tie tie A: po = 2/5, pe = (1*2 + 2*2 + 2*1)/25, kappa = 0.08/0.68
    assert agreement["cohen_kappa"] == pytest.approx(0.08 / 0.68, abs=1e-12)
    judge, humans = ["A", "tie", "tie", "B", "B"], ["A", "B", "tie", "tie", "A"]
    assert agreement["cohen_kappa"] == pytest.approx(cohen_kappa_score(judge, humans), abs=1e-12)
    assert agreement["confusion"] == {"labels": ["A", "tie", "B"], "counts": [[1, 0, 0], [0, 1, 1], [1, 1, 0]]}
    length = card["length_preference"]
    assert (length["judge"]["count"], length["judge"]["n"]) == (3, 3)  # p1, p4, p6 all to the longer
    assert (length["humans"]["count"], length["humans"]["n"]) == (2, 3)  # p1, p2 longer; p6 shorter
    assert (length["judge_all_items"]["count"], length["judge_all_items"]["n"]) == (4, 4)  # and p8
    assert length["humans"]["interval"] == wilson(2, 3)
    assert length["difference"] == pytest.approx(1 / 3)
    assert card["signature"].startswith("judge-report|v1|")


def test_hub_ids_match_when_both_files_carry_them_and_names_otherwise():
    humans = human_rows([(p, a, b, o, {"system_a_id": 7, "system_b_id": 9}) for p, a, b, o, *_ in HUMANS[:9]])
    by_name = report_card(humans, judge_file(JUDGE))  # judge without ids: matched by the humans' names
    assert by_name.human_agreement["items"] == 3
    records = tuple(
        JudgeRecord("d", p, "7", "9", a, b, o, bool(auto), ab, ba, ta, tb)
        for p, a, b, o, ab, ba, ta, tb, *auto in JUDGE
    )
    by_id = report_card(humans, JudgeFile(RATER, True, records))
    assert by_id.to_dict()["human_agreement"] == by_name.to_dict()["human_agreement"]
    assert by_id.systems == [{"system": "7", "name": "x"}, {"system": "9", "name": "y"}]


@pytest.mark.parametrize(
    ("humans", "judged", "message"),
    [
        (
            [("p1", "x", "y", "A")],
            [("p1", "u", "v", "A", "A", "A", 1, 2)],
            "share no system: the judge compared u, v; the humans judged x, y",
        ),
        (
            [("p1", "x", "y", "A"), ("p1", "y", "z", "A")],
            [("p1", "x", "z", "A", "A", "A", 1, 2)],
            "share no pair of systems: the judge compared x vs z; the humans compared x vs y, y vs z",
        ),
        (
            [("p1", "x", "y", "A"), ("p2", "x", "y", "A")],
            [("q1", "x", "y", "A", "A", "A", 1, 2)],
            "share no prompt for the same pair of systems: the judge's prompts are q1; the humans' are p1, p2",
        ),
    ],
)
def test_files_that_do_not_overlap_are_refused_naming_what_is_missing(humans, judged, message):
    with pytest.raises(InvalidInputError, match=message):
        report_card(human_rows(humans), judge_file(judged))


def test_wrong_datasets_and_judge_rows_among_humans_are_refused():
    with pytest.raises(InvalidInputError, match=r"the human file has no judgements for dataset 'd' \(it has other\)"):
        report_card(human_rows(HUMANS[:3], dataset="other"), judge_file(JUDGE))
    two = JudgeFile(RATER, False, judge_file(JUDGE).records + judge_file(JUDGE[:1], dataset="e").records)
    with pytest.raises(InvalidInputError, match=r"several datasets \(d, e\); choose one"):
        report_card(human_rows(HUMANS), two)
    assert report_card(human_rows(HUMANS), two, dataset="d").coverage["pairs"] == 8
    excluded = human_rows([(*HUMANS[0], {"excluded": True}), HUMANS[-1]])
    with pytest.raises(InvalidInputError, match=r"no included judgement for dataset 'd' \(all excluded, held out"):
        report_card(excluded, judge_file(JUDGE))
    mixed = human_rows([(*HUMANS[0], {"rater": RATER})])
    with pytest.raises(InvalidInputError, match="the human file holds judge judgements"):
        report_card(mixed, judge_file(JUDGE))
