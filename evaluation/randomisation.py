"""Recorded-seed randomisation of participants (or conversations) into arms by permuted blocks.

`assign_arm(seed, position, arms)` is a pure function of the study's recorded seed and the unit's enrolment
position (0 for the first participant or conversation of the study, 1 for the next, ...): anyone holding the seed
can recompute every assignment. Positions are cut into blocks of `len(arms) * block_repeats`; within a block each
arm appears exactly `block_repeats` times, in an order drawn from sha256(seed, block, slot), so after every
complete block the arms are exactly balanced and at any time they differ by at most `block_repeats`. SHA-256 (not
numpy's generators) keeps the draw identical on every platform and library version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from evaluation.errors import InvalidInputError

MAX_SEED = 2**63 - 1
MAX_POSITION = 10**12
MAX_ARMS = 16


def _block_order(seed: int, block: int, arms: Sequence[str], repeats: int) -> list[str]:
    slots = [(arm, copy) for copy in range(repeats) for arm in arms]

    def key(slot: tuple[str, int]) -> bytes:
        return hashlib.sha256(f"{seed}:{block}:{slot[0]}:{slot[1]}".encode()).digest()

    return [arm for arm, _ in sorted(slots, key=key)]


def assign_arm(seed: int, position: int, arms: Sequence[str], *, block_repeats: int = 1) -> str:
    """The arm of the unit enrolled at `position` (0-based) under `seed`; deterministic and block-balanced."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise InvalidInputError(f"seed must be an integer from 0 to {MAX_SEED}")
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position <= MAX_POSITION:
        raise InvalidInputError(f"position must be an integer from 0 to {MAX_POSITION}")
    if not 1 <= len(arms) <= MAX_ARMS or len(set(arms)) != len(arms) or not all(isinstance(a, str) for a in arms):
        raise InvalidInputError(f"arms must be 1 to {MAX_ARMS} distinct names")
    if not 1 <= block_repeats <= 100:
        raise InvalidInputError("block_repeats must be from 1 to 100")
    size = len(arms) * block_repeats
    block, offset = divmod(position, size)
    return _block_order(seed, block, arms, block_repeats)[offset]
