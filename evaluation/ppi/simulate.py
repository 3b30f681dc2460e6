"""Simulated data sets with known truth for prediction-powered ranking: humans answer per a Bradley-Terry model with
item effects (ties half a win) on a random share of each pair's prompts; a judge with a known position bias, length
bias and noise answers every item in both orders. Used by the tests and scripts/bench_ppi.py.

Item i of pair (a, b) has quality difference q_i = theta_a - theta_b + e_i, e_i ~ N(0, item_sd^2) (some prompts
suit one system better); humans prefer A with probability sigmoid(q_i). The target of every estimator is the
Bradley-Terry fit to the pairs' mean human preference E sigmoid(theta_a - theta_b + e), computed exactly (Gauss-
Hermite quadrature) in `truth`: with item effects it is not theta itself, and that is what a human-only fit on
infinitely many items would give."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from evaluation.ppi.estimate import PairMeans, fit_abilities
from evaluation.ppi.items import Items


@dataclass(frozen=True)
class Scenario:
    """Systems' true abilities (system 0 is the anchor) and mean response lengths (in standard deviations); the
    judge sees judge_skill * ability difference + judge_length * length difference + item noise, plus its
    position bias for whichever side is on the left."""

    abilities: tuple[float, ...] = (0.0, 0.5, -0.3, 0.9, 0.2, -0.6)
    lengths: tuple[float, ...] = (0.0, 1.0, 0.5, -1.0, 0.8, -0.5)
    n_prompts: int = 40
    human_fraction: float = 0.2
    human_votes: int = 2  # votes per labelled item
    tie_share: float = 0.2  # largest share of ties (at equal abilities)
    judge_skill: float = 1.5
    judge_length: float = 1.0
    judge_position: float = 0.5
    judge_noise: float = 0.5  # sd of the item's noise, shared by both orders
    judge_tie_band: float = 0.3  # |latent| below this is a tie
    item_sd: float = 1.5  # sd of the items' quality effects e_i
    judge_guess: float = 0.0  # share of items the judge cannot grade: it sees neither quality nor length there
    systems: tuple[str, ...] = field(default=())


def truth(scenario: Scenario) -> np.ndarray:
    """The abilities (anchor system 0 at 0) a human-only fit converges to: the Bradley-Terry fit, equal pair
    weights, to each pair's exact mean human preference."""
    theta = np.asarray(scenario.abilities, dtype=float)
    s = len(theta)
    pair_a, pair_b = np.triu_indices(s, 1)
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    diff = (theta[pair_a] - theta[pair_b])[:, None] + scenario.item_sd * nodes[None, :]
    mean = expit(diff) @ weights / weights.sum()
    z = np.zeros((len(pair_a), s))
    z[np.arange(len(pair_a)), pair_a], z[np.arange(len(pair_a)), pair_b] = 1.0, -1.0
    equal = np.full(len(pair_a), 1.0 / len(pair_a))
    fitted, _ = fit_abilities(z[:, 1:], PairMeans(equal, mean, np.zeros(len(pair_a))))
    return np.insert(fitted, 0, 0.0)


def _human_votes(rng: np.random.Generator, diff: np.ndarray, votes: int, tie_share: float) -> np.ndarray:
    """(n, votes) values 1 / 0.5 / 0 with P(A) + P(tie) / 2 = sigmoid(diff)."""
    p = expit(diff)[:, None]
    tie = tie_share * 4 * p * (1 - p)
    u = rng.random((len(diff), votes))
    return np.where(u < p - tie / 2, 1.0, np.where(u < p + tie / 2, 0.5, 0.0))


def _judge_verdicts(rng: np.random.Generator, latent: np.ndarray, band: float) -> np.ndarray:
    noisy = latent + rng.logistic(size=latent.shape)
    return np.where(noisy > band, 1.0, np.where(noisy < -band, 0.0, 0.5))


def simulate(rng: np.random.Generator, scenario: Scenario) -> Items:
    """One simulated data set: every prompt x system pair is an item the judge grades (both orders); humans judge
    round(human_fraction * n_prompts) random prompts of each pair (at least 2)."""
    sc = scenario
    theta, lengths = np.asarray(sc.abilities, float), np.asarray(sc.lengths, float)
    s = len(theta)
    pair_a, pair_b = np.triu_indices(s, 1)
    n_pairs, k = len(pair_a), sc.n_prompts
    pair = np.repeat(np.arange(n_pairs), k)
    prompt = np.tile(np.arange(k), n_pairs)
    length = lengths[None, :] + rng.standard_normal((k, s))
    a, b = pair_a[pair], pair_b[pair]
    diff = theta[a] - theta[b] + sc.item_sd * rng.standard_normal(len(pair))
    latent = sc.judge_skill * diff + sc.judge_length * (length[prompt, a] - length[prompt, b])
    latent = latent + sc.judge_noise * rng.standard_normal(len(pair))
    if sc.judge_guess > 0:  # a guess: position and noise only
        latent = np.where(rng.random(len(pair)) < sc.judge_guess, 0.0, latent)
    left_a = _judge_verdicts(rng, latent + sc.judge_position, sc.judge_tie_band)
    left_b = _judge_verdicts(rng, latent - sc.judge_position, sc.judge_tie_band)
    per_pair = max(2, round(sc.human_fraction * k))
    chosen = np.argsort(rng.random((n_pairs, k)), axis=1)[:, :per_pair]
    grid = np.zeros((n_pairs, k), dtype=bool)
    grid[np.arange(n_pairs)[:, None], chosen] = True
    labelled = grid.ravel()
    human = np.full(len(pair), np.nan)
    human[labelled] = _human_votes(rng, diff[labelled], sc.human_votes, sc.tie_share).mean(axis=1)
    names = sc.systems or tuple(f"system-{i}" for i in range(s))
    return Items(
        systems=names,
        names=names,
        keyed_by_id=False,
        pair_a=pair_a,
        pair_b=pair_b,
        pair=pair,
        judge=(left_a + left_b) / 2,
        human=human,
        human_votes=np.where(labelled, sc.human_votes, 0),
        judge_left_a=left_a,
        judge_left_b=left_b,
    )
