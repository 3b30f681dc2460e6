"""Worked example for analysts: recompute an experiment page's numbers from the hub's ratings download.

Reads the ratings export (JSONL or CSV, kind "ratings", schema version 1; minimal third-party files with only
prompt_id, system_a, system_b, outcome and rater work too) and prints, per experiment: wins / ties / losses of
system A, win rate with its Wilson interval, the sign test, Cohen's weighted kappa (mean over rater pairs) and
Fleiss' kappa, each with and without the excluded ratings, and how many raters screening flags. It uses nothing
but the file and the `evaluation` library's pure functions, so the figures can be checked and extended.

    python scripts/analyze_ratings.py --ratings ratings.jsonl [--experiment ID] [--json]

Which rows count: only item_kind "pair" rows (or rows without item_kind) are judgements of the two systems;
automatic ties (identical responses, no rater) count as ties in the results but take no part in agreement. Rows
marked `held_out` (a rater the hub's screening flagged, awaiting an admin's decision) are left out of every figure,
as on the experiment page, but still screened. The hub's own screening flag for raters created in a burst from one
client is not recomputed: it rests on the raters' client addresses, which the download never carries (they would
link raters), so a held-out rater may show no flag here; that flag is for admins only.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.agreement import AgreementFigures, AgreementSummary, agreement
from evaluation.csv_cells import restore
from evaluation.errors import EvaluationError, InvalidInputError, NotFoundError
from evaluation.pairwise_results import OUTCOMES, PairwiseSummary, summarize
from evaluation.rater_quality import KINDS, RaterQuality, RatingRow, screen

REQUIRED = ("prompt_id", "system_a", "system_b", "outcome", "rater")
BOOLEAN_FIELDS = ("auto_tie", "excluded", "held_out")


@dataclass
class Rating:
    """One row of the export: its line, its fields and the same row as the screening sees it."""

    line: int
    fields: dict[str, Any]
    row: RatingRow

    @property
    def experiment(self) -> str:
        if self.fields.get("experiment_id") not in (None, ""):
            return str(self.fields["experiment_id"])
        return f"{self.fields['system_a']} vs {self.fields['system_b']}"

    @property
    def kind(self) -> str:
        return self.fields.get("item_kind") or "pair"

    @property
    def excluded(self) -> bool:
        return bool(self.fields.get("excluded"))

    @property
    def held_out(self) -> bool:
        return bool(self.fields.get("held_out"))


def _parse_bool(value: str, path: Path, line: int, name: str) -> bool | None:
    if value == "":
        return None
    if value in ("true", "false"):
        return value == "true"
    raise InvalidInputError(f"{name} must be true or false, got {value!r}", path=path, line=line)


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as error:
                raise InvalidInputError(f"not JSON: {error.msg}", path=path, line=number) from None
            if not isinstance(record, dict):
                raise InvalidInputError("each line must be a JSON object", path=path, line=number)
            if number == 1 and "kind" in record and "outcome" not in record:
                if record.get("kind") != "ratings" or record.get("schema_version") != 1:
                    raise InvalidInputError("header must say kind 'ratings', schema_version 1", path=path, line=number)
                continue
            yield number, record


def _read_csv(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [name for name in REQUIRED if name not in (reader.fieldnames or [])]
        if missing:
            raise InvalidInputError(f"missing column(s): {', '.join(missing)}", path=path, line=1)
        for record in reader:
            number = reader.line_num
            # The hub quotes text cells that start like formulas (evaluation/csv_cells.py): unquoted here.
            fields: dict[str, Any] = {k: (restore(v) if v != "" else None) for k, v in record.items() if k is not None}
            for name in BOOLEAN_FIELDS:
                if name in record:
                    fields[name] = _parse_bool(record[name], path, number, name)
            if fields.get("seconds_on_task") is not None:
                try:
                    fields["seconds_on_task"] = float(fields["seconds_on_task"])
                except ValueError:
                    raise InvalidInputError("seconds_on_task must be a number", path=path, line=number) from None
            yield number, fields


def _check(fields: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    missing = [name for name in REQUIRED if name not in fields]
    if missing:
        raise InvalidInputError(f"missing field(s): {', '.join(missing)}", path=path, line=line)
    if fields["outcome"] not in OUTCOMES:
        raise InvalidInputError(f"outcome must be A, B or tie, got {fields['outcome']!r}", path=path, line=line)
    kind = fields.get("item_kind") or "pair"
    if kind not in KINDS:
        raise InvalidInputError(f"item_kind must be one of {', '.join(KINDS)}, got {kind!r}", path=path, line=line)
    if fields["rater"] in (None, "") and not fields.get("auto_tie"):
        raise InvalidInputError("rater is empty but the row is not an automatic tie", path=path, line=line)
    fields["prompt_id"] = str(fields["prompt_id"])
    return fields


def rating_row(f: dict[str, Any]) -> RatingRow:
    """The row as rater screening reads it; the item is the prompt, so a repeat matches its original pair."""
    return RatingRow(
        item=f["prompt_id"],
        rater=f["rater"] or None,
        outcome=f["outcome"],
        kind=f.get("item_kind") or "pair",
        choice=f.get("choice"),
        left=f.get("left"),
        expected=f.get("expected"),
        task=f.get("task_id"),
        seconds_on_task=f.get("seconds_on_task"),
        excluded=bool(f.get("excluded")),
    )


def read_ratings(path: Path) -> list[Rating]:
    """Every rating of the export; the format is JSONL unless the file name ends in .csv."""
    if not path.is_file():
        raise NotFoundError("ratings file not found", path=path)
    ratings = []
    for line, fields in _read_csv(path) if path.suffix.lower() == ".csv" else _read_jsonl(path):
        fields = _check(fields, path, line)
        try:
            row = rating_row(fields)
        except ValueError as error:
            raise InvalidInputError(str(error), path=path, line=line) from None
        ratings.append(Rating(line, fields, row))
    return ratings


def _same_systems(ratings: list[Rating], path: Path) -> None:
    first = ratings[0].fields
    for rating in ratings:
        if (rating.fields["system_a"], rating.fields["system_b"]) != (first["system_a"], first["system_b"]):
            raise InvalidInputError(
                f"experiment {rating.experiment} compares {first['system_a']} vs {first['system_b']} on line "
                f"{ratings[0].line} but {rating.fields['system_a']} vs {rating.fields['system_b']} here",
                path=path,
                line=rating.line,
            )


@dataclass
class ExperimentReport:
    experiment: str
    dataset: str | None
    system_a: str
    system_b: str
    results: PairwiseSummary
    results_without_excluded: PairwiseSummary
    agreement: AgreementSummary
    screening: list[RaterQuality]
    automatic_ties: int
    checks: int
    held_out: dict[str, int]  # raters and pair judgements left out while awaiting an admin's decision

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "dataset": self.dataset,
            "system_a": self.system_a,
            "system_b": self.system_b,
            "automatic_ties": self.automatic_ties,
            "quality_checks": self.checks,
            "results": self.results.to_dict(),
            "results_without_excluded": self.results_without_excluded.to_dict(),
            "agreement": self.agreement.to_dict(),
            "raters": len(self.screening),
            "flagged_raters": [{"rater": q.rater, "flags": q.flags} for q in self.screening if q.flagged],
            "held_out": self.held_out,
        }


def analyze(ratings: list[Rating], *, confidence: float = 0.95) -> ExperimentReport:
    """The experiment page's figures for the ratings of one experiment."""
    pairs = [r for r in ratings if r.kind == "pair" and not r.held_out]
    rated = [r for r in pairs if r.fields["rater"] not in (None, "")]
    held_out = [r for r in ratings if r.kind == "pair" and r.held_out]
    first = ratings[0].fields
    return ExperimentReport(
        experiment=ratings[0].experiment,
        dataset=first.get("dataset"),
        system_a=first["system_a"],
        system_b=first["system_b"],
        results=summarize([r.fields["outcome"] for r in pairs], confidence=confidence),
        results_without_excluded=summarize(
            [r.fields["outcome"] for r in pairs if not r.excluded], confidence=confidence
        ),
        agreement=agreement(
            [r.fields["prompt_id"] for r in rated],
            [r.fields["rater"] for r in rated],
            [r.fields["outcome"] for r in rated],
            excluded=[r.excluded for r in rated],
        ),
        screening=screen([r.row for r in ratings]),
        automatic_ties=len(pairs) - len(rated),
        checks=sum(1 for r in ratings if r.kind != "pair"),
        held_out={"raters": len({r.fields["rater"] for r in held_out}), "judgements": len(held_out)},
    )


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _rate(rate: float | None, ci: tuple[float, float] | None) -> str:
    return "n/a" if rate is None or ci is None else f"{rate:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _cohen(figures: AgreementFigures) -> str:
    return f"{_number(figures.cohen_kappa)} ({figures.rater_pairs} rater pairs)"


def _fleiss(figures: AgreementFigures) -> str:
    shape = f"{figures.fleiss_items} items x {figures.fleiss_ratings_per_item}" if figures.fleiss_items else "no items"
    return f"{_number(figures.fleiss_kappa)} ({shape})"


def render(report: ExperimentReport) -> str:
    a, b = report.results, report.results_without_excluded
    agree = report.agreement
    dataset = f" on {report.dataset}" if report.dataset else ""
    table = [
        ("wins / ties / losses", f"{a.wins} / {a.ties} / {a.losses}", f"{b.wins} / {b.ties} / {b.losses}"),
        ("win rate (ties dropped)", _rate(a.win_rate, a.win_rate_ci), _rate(b.win_rate, b.win_rate_ci)),
        (
            "win rate (tie = half)",
            _rate(a.win_rate_tie_half, a.win_rate_tie_half_ci),
            _rate(b.win_rate_tie_half, b.win_rate_tie_half_ci),
        ),
        ("sign test p", _number(a.p_value, 4), _number(b.p_value, 4)),
        ("Cohen's weighted kappa", _cohen(agree.with_excluded), _cohen(agree.without_excluded)),
        ("Fleiss' kappa", _fleiss(agree.with_excluded), _fleiss(agree.without_excluded)),
    ]
    flagged = [q for q in report.screening if q.flagged]
    lines = [
        f"Experiment {report.experiment}{dataset}: A = {report.system_a}, B = {report.system_b}",
        f"  {a.n} pair judgements (automatic ties: {report.automatic_ties}), quality-check rows: {report.checks}, "
        f"excluded rated judgements: {agree.excluded_judgements}, held out (flagged, awaiting an admin's decision): "
        f"{report.held_out['judgements']} judgements of {report.held_out['raters']} raters",
        f"  {'':26}{'all ratings':32}without excluded",
        *(f"  {name:26}{left:32}{right}" for name, left, right in table),
        f"  raters flagged by screening: {len(flagged)} of {len(report.screening)}",
        *(f"    {q.rater}: {'; '.join(q.flags)}" for q in flagged),
        f"  {a.signature}",
        f"  {agree.signature}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ratings", type=Path, required=True, help="the hub's ratings export (.jsonl or .csv)")
    parser.add_argument("--experiment", help="only this experiment id")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    try:
        groups: dict[str, list[Rating]] = defaultdict(list)
        for rating in read_ratings(args.ratings):
            groups[rating.experiment].append(rating)
        if args.experiment is not None:
            if args.experiment not in groups:
                raise NotFoundError(f"no ratings for experiment {args.experiment!r}", path=args.ratings)
            groups = {args.experiment: groups[args.experiment]}
        for ratings in groups.values():
            _same_systems(ratings, args.ratings)
        reports = [analyze(groups[key], confidence=args.confidence) for key in sorted(groups)]
    except EvaluationError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    if args.json:
        print(json.dumps({"experiments": [r.to_dict() for r in reports]}, indent=2))
    else:
        print("\n\n".join(render(r) for r in reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
