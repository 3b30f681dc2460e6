"""Word vectors: load any gensim KeyedVectors / word2vec file memory-mapped, convert, checksum and fetch."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from evaluation.errors import ConfigurationError, InvalidInputError, NotFoundError
from evaluation.native_vectors import read_native
from evaluation.settings import get_settings

WORD2VEC_BINARY = (".bin", ".bin.gz")
WORD2VEC_TEXT = (".txt", ".txt.gz", ".vec", ".vec.gz")


@dataclass(frozen=True)
class WordVectors:
    """Loaded vectors and the checksum that identifies them in metric signatures."""

    keyed_vectors: object  # gensim's KeyedVectors, or native_vectors.StoredKeyedVectors (same attributes) for its files
    sha256: str
    path: Path

    @property
    def dimensions(self) -> int:
        return int(self.keyed_vectors.vector_size)  # type: ignore[attr-defined]

    @property
    def vocabulary_size(self) -> int:
        return len(self.keyed_vectors.key_to_index)  # type: ignore[attr-defined]


def vector_files(path: Path) -> list[Path]:
    """The file itself plus gensim's side files (`NAME.vectors.npy`), which hold the actual vectors."""
    return [path, *sorted(path.parent.glob(f"{path.name}.*.npy"))]


def checksum(path: Path) -> str:
    """sha256 over the vector file(s), cached by path, size and modification time (GoogleNews is 3.6 GB)."""
    files = vector_files(path)
    stamp = [[str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    cache_path = get_settings().home / "cache" / "vector-checksums.json"
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    key = json.dumps(stamp)
    if key in cache:
        return cache[key]
    digest = hashlib.sha256()
    for file in files:
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    value = digest.hexdigest()
    cache[key] = value
    try:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps(cache))
    except OSError:
        pass  # a read-only home only costs a re-hash next time
    return value


def _load_keyed_vectors(path: Path, *, with_gensim: bool = False):
    name = path.name.lower()
    native = not name.endswith(WORD2VEC_BINARY + WORD2VEC_TEXT)
    if native and not with_gensim:
        # gensim's native format, read without importing gensim where it can be (native_vectors.py), the vectors
        # memory-mapped so processes share one copy in the page cache.
        stored = read_native(path)
        if stored is not None:
            return stored
    from gensim.models import KeyedVectors

    if native:
        return KeyedVectors.load(str(path), mmap="r")
    return KeyedVectors.load_word2vec_format(str(path), binary=name.endswith(WORD2VEC_BINARY))


def load_vectors(path: str | Path) -> WordVectors:
    """Load word vectors; a bad file is refused with a message naming it. Loaded vectors are kept while
    the file is unchanged (same size and modification time), so a replaced file is read afresh."""
    path = Path(path)
    if not path.is_file():
        raise NotFoundError("word vectors file not found", path=path)
    stamp = tuple((str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns) for f in vector_files(path))
    return _load_vectors(path, stamp)


@lru_cache(maxsize=4)
def _load_vectors(path: Path, stamp: tuple) -> WordVectors:
    try:
        keyed_vectors = _load_keyed_vectors(path)
    except Exception as exc:  # gensim raises many types (pickle, ValueError, UnicodeDecodeError, EOFError)
        raise InvalidInputError(
            "cannot read word vectors (expected gensim KeyedVectors, word2vec .bin or word2vec text "
            f"format): {type(exc).__name__}: {exc}",
            path=path,
        ) from exc
    if not hasattr(keyed_vectors, "key_to_index") or len(keyed_vectors.key_to_index) == 0:
        raise InvalidInputError("word vectors file holds no vectors", path=path)
    return WordVectors(keyed_vectors=keyed_vectors, sha256=checksum(path), path=path)


def convert(source: Path, target: Path) -> WordVectors:
    """Convert word2vec (text or binary) into gensim's format with the vectors in a separate .npy file,
    which `load_vectors` memory-maps instead of copying into each process."""
    if target.exists():
        raise InvalidInputError("target already exists", path=target)
    keyed_vectors = load_vectors(source).keyed_vectors
    if not hasattr(keyed_vectors, "save"):  # a native file read without gensim: gensim writes the copy
        keyed_vectors = _load_keyed_vectors(source, with_gensim=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    keyed_vectors.save(str(target), separately=["vectors"])  # type: ignore[attr-defined]
    return load_vectors(target)


def fetch(name: str) -> Path:
    """Download vectors by gensim-data name (e.g. word2vec-google-news-300) and convert them for mmap."""
    target = get_settings().home / "vectors" / f"{name}.kv"
    if target.exists():
        return target
    try:
        import gensim.downloader as downloader

        source = Path(downloader.load(name, return_path=True))
    except Exception as exc:
        raise ConfigurationError(
            f"could not download word vectors {name!r} with gensim's downloader ({type(exc).__name__}: {exc}); "
            "on a machine without internet, copy a word2vec file here and use `chateval embeddings convert`"
        ) from exc
    convert(source, target)
    return target
