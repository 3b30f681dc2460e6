"""Which prompts to pay raters for: a dataset's prompts ranked by the expected information one judgement gives about
a planned comparison (evaluation.irt.information), at the gap the newest IRT fit estimates between the two systems.

A system the fit has not seen yet (a new submission) is planned at gap 0, where every prompt's information is
a_k^2 times the information of a coin flip; prompts never judged get discrimination 1, the prior's median.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlmodel import Session

from evaluation.irt.information import expected_information, outcome_probabilities
from hub.errors import NotFound, UnprocessableInput
from hub.models import System
from hub.services.platform.datasets import installed_dataset
from hub.services.statistics.irt_fits import latest_fit

PRIOR_DISCRIMINATION = 1.0
METHOD = "expected-information"


def _system(session: Session, system_id: int) -> System:
    system = session.get(System, system_id)
    if system is None:
        raise NotFound(f"no system #{system_id}")
    return system


def plan(session: Session, dataset_name: str, system_a_id: int, system_b_id: int) -> dict[str, Any]:
    """Every prompt of the installed dataset, most informative first, with the fit and gap the ranking used."""
    if system_a_id == system_b_id:
        raise UnprocessableInput("system A and system B must differ", field="system_b_id")
    dataset = installed_dataset(dataset_name)
    system_a, system_b = _system(session, system_a_id), _system(session, system_b_id)
    fit = latest_fit(session, dataset.name)
    if fit is not None and not fit.report:  # superseded: too few public judgements left
        fit = None
    report = fit.report if fit is not None else {"systems": [], "prompts": [], "tau": 0.0}
    abilities = {row.get("system_id"): row["ability"] for row in report["systems"]}  # by id: names may repeat
    known = system_a.id in abilities and system_b.id in abilities
    gap = abilities[system_a.id] - abilities[system_b.id] if known else 0.0
    fitted = {row["prompt"]: row["discrimination"] for row in report["prompts"]}
    discrimination = np.array([fitted.get(pid, PRIOR_DISCRIMINATION) for pid in dataset.prompt_ids])
    tau = report["tau"] or 0.0
    information = expected_information(discrimination, gap, tau)
    p_a, p_b, p_tie = outcome_probabilities(discrimination, gap, tau)
    order = np.lexsort((np.arange(len(information)), -information))
    return {
        "dataset": dataset.name,
        "method": METHOD,
        "fit_id": fit.id if fit is not None else None,
        "system_a": {"id": system_a.id, "name": system_a.name},
        "system_b": {"id": system_b.id, "name": system_b.name},
        "gap": gap,
        "gap_source": "fit" if known else "prior (a system is not in the fit yet)",
        "tau": tau,
        "prompts": [
            {
                "prompt_id": dataset.prompt_ids[k],
                "discrimination": float(discrimination[k]),
                "fitted": dataset.prompt_ids[k] in fitted,
                "information": float(information[k]),
                "p_a": float(p_a[k]),
                "p_b": float(p_b[k]),
                "p_tie": float(p_tie[k]),
            }
            for k in order
        ],
    }


def most_informative(session: Session, dataset_name: str, system_a_id: int, system_b_id: int, count: int):
    """The `count` most informative prompt ids and how they were chosen (kept in the experiment's settings)."""
    ranked = plan(session, dataset_name, system_a_id, system_b_id)
    if ranked["fit_id"] is None:  # every prompt would look alike: the "most informative" would be the first N
        raise UnprocessableInput(
            f"{dataset_name} has no IRT fit yet to rank its prompts by; list the prompt ids to judge instead",
            field="most_informative",
        )
    chosen = [row["prompt_id"] for row in ranked["prompts"][:count]]
    selection = {
        "method": METHOD,
        "fit_id": ranked["fit_id"],
        "gap": ranked["gap"],
        "gap_source": ranked["gap_source"],
        "count": len(chosen),
        "information": sum(row["information"] for row in ranked["prompts"][:count]),
    }
    return chosen, selection
