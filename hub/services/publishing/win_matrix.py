"""A leaderboard's win-rate matrix: for every two systems with human results on the dataset, how often the human
judgements preferred the row's system over the column's (ties left out of the rate, as in every human win rate on
the hub, and counted in n), pooled over every launched experiment of the pair the viewer may see."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hub.models import Experiment
from hub.services.human.human_summaries import FLIP, HELD_OUT, Counts

MAX_MATRIX_SYSTEMS = 40  # rows and columns; a bigger board shows its first ones in the board's order
Pair = tuple[int, int]


def pair_counts(experiments: list[Experiment], counts: dict[int, Counts]) -> dict[Pair, Counts]:
    """(a, b) -> the outcomes of every judgement of a against b from a's side (A = a preferred), both orders
    present; judgements held out (flagged raters awaiting a decision) are left out, as in the win-rate columns."""
    pairs: dict[Pair, Counts] = defaultdict(lambda: defaultdict(int))
    for experiment in experiments:
        a, b = experiment.system_a_id, experiment.system_b_id
        for outcome, n in counts.get(experiment.id, {}).items():
            if outcome == HELD_OUT:
                continue
            pairs[(a, b)][outcome] += n
            pairs[(b, a)][FLIP[outcome]] += n
    return pairs


def _cell(counts: Counts) -> dict[str, Any]:
    wins, ties, losses = counts.get("A", 0), counts.get("tie", 0), counts.get("B", 0)
    decided = wins + losses
    return {
        "win_rate": wins / decided if decided else None,
        "n": wins + ties + losses,
        "wins": wins,
        "ties": ties,
        "losses": losses,
    }


def win_matrix(pairs: dict[Pair, Counts], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The matrix over the systems of `rows` (in their order, each once) that were judged against another of them:
    `systems` (ids and names), `cells[i][j]` for systems[i] against systems[j] (None where they never met, and on
    the diagonal), `left_out` counting the systems past MAX_MATRIX_SYSTEMS. None when no two listed systems met."""
    names = {row["system_id"]: row["system_name"] for row in rows}
    met = {a for a, b in pairs if a in names and b in names}
    order = [system_id for system_id in dict.fromkeys(row["system_id"] for row in rows) if system_id in met]
    if not order:
        return None
    shown = order[:MAX_MATRIX_SYSTEMS]
    return {
        "systems": [{"id": system_id, "name": names[system_id]} for system_id in shown],
        "cells": [[_cell(pairs[(a, b)]) if (a, b) in pairs else None for b in shown] for a in shown],
        "left_out": len(order) - len(shown),
        "method": "row system's share of the human judgements between the two that preferred it, ties left out "
        "(n counts every judgement, ties included); pooled over every published experiment of the pair",
    }
