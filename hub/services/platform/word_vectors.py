"""Which word vectors the hub scores embedding-average with: one file for the hub, or one per dataset.

`HUB_WORD_VECTORS=PATH` sets the hub's file; `HUB_WORD_VECTORS_DATASETS="ncm=PATH;dbdc=PATH"` sets a dataset's own
(it wins over the hub's; `none` turns the metric off for that dataset). A path is any gensim KeyedVectors or word2vec
file (`evaluation.embeddings.load_vectors`: memory-mapped, its sha256 in the metric's signature). The word
`gensim-test` names the small vectors gensim ships with its test data (`lee_fasttext.vec`: 1,762 words, 10
dimensions), which `make run` uses so a fresh demo shows the metric: they are real but tiny, and are labelled so.
A dataset without vectors shows the metric as unavailable with `unavailable_reason`, never as a silent gap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hub.settings import get_settings

METRIC = "embedding-average"
GENSIM_TEST = "gensim-test"
GENSIM_TEST_LABEL = "gensim test vectors, tiny, for the demo (lee_fasttext.vec, 1,762 words, 10 dimensions)"
OFF = "none"
_DATASET = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,119}$")


@dataclass(frozen=True)
class VectorChoice:
    """The vectors a dataset is scored with (None: not configured) and how pages label them."""

    path: Path | None
    label: str
    source: str  # "HUB_WORD_VECTORS", "HUB_WORD_VECTORS_DATASETS" or "" when none apply


def gensim_test_vectors() -> Path:
    """gensim's own small real vectors (trained on the Lee corpus), installed with gensim: loadable offline."""
    import gensim

    return Path(gensim.__file__).resolve().parent / "test" / "test_data" / "lee_fasttext.vec"


def parse_per_dataset(value: str) -> dict[str, str]:
    """`name=PATH` pairs separated by `;`; a malformed pair is refused naming it (at start-up, not mid-job)."""
    chosen: dict[str, str] = {}
    for index, part in enumerate(p.strip() for p in value.split(";")):
        if not part:
            continue
        name, sep, path = part.partition("=")
        name, path = name.strip().lower(), path.strip()
        if not sep or not _DATASET.fullmatch(name) or not path or len(path) > 4096:
            raise ValueError(
                f"HUB_WORD_VECTORS_DATASETS entry {index + 1} ({part[:60]!r}): expected DATASET=PATH, "
                "DATASET=gensim-test or DATASET=none"
            )
        chosen[name] = path
    return chosen


def _resolve(value: str, source: str) -> VectorChoice:
    if value == GENSIM_TEST:
        return VectorChoice(gensim_test_vectors(), GENSIM_TEST_LABEL, source)
    if value.lower() == OFF:
        return VectorChoice(None, "", source)
    path = Path(value).expanduser()
    return VectorChoice(path, path.name, source)


def vectors_for(dataset_name: str) -> VectorChoice:
    """The dataset's own vectors if HUB_WORD_VECTORS_DATASETS names it, else the hub's, else none."""
    settings = get_settings()
    own = parse_per_dataset(settings.word_vectors_datasets).get(dataset_name.lower())
    if own is not None:
        return _resolve(own, "HUB_WORD_VECTORS_DATASETS")
    if settings.word_vectors.strip():
        return _resolve(settings.word_vectors.strip(), "HUB_WORD_VECTORS")
    return VectorChoice(None, "", "")


def unavailable_reason(dataset_name: str) -> str | None:
    """Why the dataset has no embedding-average, or None when vectors are configured."""
    choice = vectors_for(dataset_name)
    if choice.path is not None:
        return None
    if choice.source:
        return f"word vectors are turned off for {dataset_name} ({choice.source})"
    return (
        f"no word vectors configured for {dataset_name} (an admin sets HUB_WORD_VECTORS=PATH for the hub or "
        "HUB_WORD_VECTORS_DATASETS=DATASET=PATH for one dataset)"
    )


def describe(dataset_name: str) -> dict[str, str | None]:
    """What pages say about the metric on this dataset: the vectors' label, or the reason it is unavailable."""
    choice = vectors_for(dataset_name)
    return {"metric": METRIC, "vectors": choice.label or None, "unavailable": unavailable_reason(dataset_name)}
