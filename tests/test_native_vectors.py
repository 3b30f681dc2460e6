"""gensim's native KeyedVectors files read without importing gensim (evaluation/native_vectors.py): the same words and
vectors as gensim's own load, memory-mapped; other layouts and foreign pickles are left to gensim."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
from gensim.models import KeyedVectors

from evaluation.embeddings import load_vectors
from evaluation.native_vectors import StoredKeyedVectors, read_native

WORDS = {"hello": (0.5, -1.0, 2.0), "world": (1.5, 0.25, -3.0), "ünï": (0.0, 1.0, 1e-7)}


def _keyed_vectors() -> KeyedVectors:
    kv = KeyedVectors(vector_size=3)
    kv.add_vectors(list(WORDS), np.array(list(WORDS.values()), dtype=np.float32))
    return kv


def test_a_native_file_reads_as_gensim_reads_it_without_importing_gensim(tmp_path):
    path = tmp_path / "v.kv"
    _keyed_vectors().save(str(path), separately=["vectors"])
    stored = read_native(path)
    reference = KeyedVectors.load(str(path), mmap="r")
    assert isinstance(stored, StoredKeyedVectors) and isinstance(stored.vectors, np.memmap)
    assert stored.key_to_index == reference.key_to_index and stored.vector_size == 3
    assert np.array_equal(stored.vectors, reference.vectors) and stored.vectors.dtype == reference.vectors.dtype
    assert isinstance(load_vectors(path).keyed_vectors, StoredKeyedVectors)
    probe = (
        f"import sys; from evaluation.embeddings import load_vectors; load_vectors({str(path)!r}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('gensim', 'scipy')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_other_layouts_are_loaded_by_gensim(tmp_path):
    inline = tmp_path / "inline.kv"
    _keyed_vectors().save(str(inline))  # small vectors stay inside the pickle: no .npy beside it
    assert read_native(inline) is None
    loaded = load_vectors(inline).keyed_vectors
    assert isinstance(loaded, KeyedVectors) and loaded.key_to_index == _keyed_vectors().key_to_index


class _Runs:
    def __reduce__(self):
        return (print, ("ran",))


def test_a_pickle_naming_other_code_is_not_run(tmp_path, capsys):
    path = tmp_path / "evil.kv"
    path.write_bytes(pickle.dumps(_Runs()))
    assert read_native(path) is None
    assert "ran" not in capsys.readouterr().out
