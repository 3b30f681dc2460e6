"""Read gensim's native KeyedVectors file (`KeyedVectors.save(..., separately=["vectors"])`, what `chateval embeddings
convert` writes) without importing gensim: its import pulls in scipy.stats and costs about 1.7 s of CPU and 60 MB
before a single vector is read, longer than the embedding metric itself takes on 100,000 prompts.

The file is a pickle of the KeyedVectors object's attributes with the vectors stored beside it as `NAME.vectors.npy`,
which is memory-mapped here as gensim's `KeyedVectors.load(path, mmap="r")` does. Only the gensim 4 layout is read:
the pickle may name no class but gensim's KeyedVectors and numpy's array reconstruction (so, unlike a plain unpickle,
it runs no other code), every separately stored attribute is a plain `.npy` array, and nothing older needs
up-converting. Anything else gives None and the caller loads the file with gensim itself.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np

KEYED_VECTORS = ("gensim.models.keyedvectors", "KeyedVectors")
NUMPY_GLOBALS = {
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
}


class StoredKeyedVectors:
    """The attributes of a saved KeyedVectors: `vectors` (memory-mapped), `vector_size`, `key_to_index`,
    `index_to_key` and whatever else gensim stored."""

    vectors: np.ndarray
    vector_size: int
    key_to_index: dict[str, int]

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise pickle.UnpicklingError("unexpected KeyedVectors state")
        self.__dict__.update(state)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == KEYED_VECTORS:
            return StoredKeyedVectors
        if (module, name) in NUMPY_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a gensim 4 KeyedVectors file")


def read_native(path: Path) -> StoredKeyedVectors | None:
    """The vectors of a gensim 4 native file, memory-mapped; None when the file is not one this reads (the caller
    then uses gensim, which also gives the error message for a damaged file)."""
    try:
        with path.open("rb") as handle:
            stored = _Unpickler(handle).load()
    except Exception:  # not a pickle, another class or layout: gensim decides
        return None
    if not isinstance(stored, StoredKeyedVectors):
        return None
    state = stored.__dict__
    separately = state.pop("__numpys", None)
    others = [state.pop(name, None) for name in ("__scipys", "__ignoreds", "__recursive_saveloads")]
    if separately != ["vectors"] or any(others) or "doctags" in state:
        return None
    if not isinstance(state.get("key_to_index"), dict) or not isinstance(state.get("vector_size"), int):
        return None
    side_file = path.with_name(f"{path.name}.vectors.npy")
    try:
        vectors = np.load(side_file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    if vectors.ndim != 2 or vectors.shape != (len(state["key_to_index"]), state["vector_size"]):
        return None
    stored.vectors = vectors
    return stored
