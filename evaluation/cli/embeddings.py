"""`chateval embeddings`: convert word2vec files for memory-mapping, fetch with gensim, inspect."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evaluation import embeddings
from evaluation.cli.console import out

app = typer.Typer(help="Word vectors for the embedding-average metric.", no_args_is_help=True)


@app.command("convert")
def convert(
    source: Annotated[Path, typer.Argument(help="word2vec file (.bin, .bin.gz, .txt, .vec) or gensim file.")],
    target: Annotated[Path, typer.Argument(help="Output .kv file (vectors go to TARGET.vectors.npy).")],
) -> None:
    """Convert vectors into gensim's format, memory-mapped on load (one copy shared by all processes)."""
    vectors = embeddings.convert(source, target)
    out.print(
        f"wrote {target}: {vectors.vocabulary_size:,} words x {vectors.dimensions} dims, sha256 {vectors.sha256}",
        highlight=False,
    )


@app.command("info")
def info(path: Annotated[Path, typer.Argument(help="Vectors file.")]) -> None:
    """Vocabulary size, dimensions and checksum of a vectors file."""
    vectors = embeddings.load_vectors(path)
    out.print(f"{path}: {vectors.vocabulary_size:,} words x {vectors.dimensions} dims, sha256 {vectors.sha256}")


@app.command("fetch")
def fetch(
    name: Annotated[str, typer.Argument(help="gensim-data name, e.g. word2vec-google-news-300.")],
) -> None:
    """Download vectors with gensim's downloader (needs internet) and convert them for memory-mapping."""
    target = embeddings.fetch(name)
    out.print(f"vectors ready: {target}  (use --embeddings {target})", highlight=False)
