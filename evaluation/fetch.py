"""Public datasets declared as data (`datasets/NAME.fetch.json`: URLs, sha256, licence), fetched when used."""

from __future__ import annotations

import hashlib
import http.client
import shutil
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from evaluation.dataset import Dataset, load_dataset_dir
from evaluation.errors import InvalidInputError, NetworkError, NotFoundError
from evaluation.settings import REPO_DATASETS, get_settings
from evaluation.text_import import import_text

SUFFIX = ".fetch.json"


class RemoteFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str
    sha256: str
    name: str = ""


class FetchManifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    version: str
    description: str
    source: str
    license: str
    citation: str
    prompts: RemoteFile
    references: list[RemoteFile]


def fetchable() -> dict[str, Path]:
    return {p.name.removesuffix(SUFFIX): p for p in sorted(REPO_DATASETS.glob(f"*{SUFFIX}"))}


def read_fetch_manifest(name: str) -> FetchManifest:
    known = fetchable()
    if name not in known:
        raise NotFoundError(f"no fetchable dataset {name!r} (known: {', '.join(known) or 'none'})")
    try:
        return FetchManifest.model_validate_json(known[name].read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise InvalidInputError(f"invalid fetch manifest: {exc.errors()[0]['msg']}", path=known[name]) from exc


def _source_url(remote: RemoteFile, mirror: str | None) -> str:
    """The original URL, or the same file name under a mirror (a URL prefix or a local folder)."""
    if mirror is None:
        return remote.url
    filename = Path(urllib.parse.urlparse(remote.url).path).name
    if "://" not in mirror:
        found = Path(mirror, filename)
        return (found if found.exists() else _by_checksum(Path(mirror), remote.sha256) or found).resolve().as_uri()
    return mirror.rstrip("/") + "/" + filename


def _by_checksum(folder: Path, sha256: str, *, largest: int = 64 << 20) -> Path | None:
    """A file in a local mirror's sub-folders (two levels, e.g. the original ChatEval's `prompts/ncm.txt`) whose
    sha256 is the expected one, for mirrors that keep the files under other names."""
    for path in sorted([*folder.glob("*/*"), *folder.glob("*/*/*")]):
        small = path.is_file() and path.stat().st_size <= largest
        if small and hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
            return path
    return None


def download(remote: RemoteFile, target: Path, *, mirror: str | None = None, timeout: float = 60) -> Path:
    """Copy one remote file to `target`. A local mirror folder without the file is NotFoundError (exit 4); a server
    that cannot be reached, times out, drops the connection or answers an HTTP error is NetworkError (exit 8)."""
    url = _source_url(remote, mirror)
    digest = hashlib.sha256()
    with target.open("wb") as handle:
        try:
            response = urllib.request.urlopen(url, timeout=timeout)
        except (OSError, http.client.HTTPException) as exc:  # URLError and HTTPError are OSErrors
            if url.startswith("file:"):
                raise NotFoundError(f"could not read {url}: {exc}") from exc
            raise NetworkError(f"could not download {url}: {exc}") from exc
        with response:
            expected, received = response.headers.get("Content-Length", ""), 0
            while True:
                try:
                    block = response.read(1 << 16)
                except (OSError, http.client.HTTPException) as exc:  # reset, timed out or cut short mid-file
                    raise NetworkError(f"download of {url} broke off: {exc}") from exc
                if not block:
                    break
                received += len(block)
                digest.update(block)
                handle.write(block)
    if expected.isdigit() and received < int(expected):  # urllib ends a short body quietly
        raise NetworkError(f"download of {url} broke off after {received:,} of {int(expected):,} bytes")
    if digest.hexdigest() != remote.sha256:
        raise InvalidInputError(
            f"checksum mismatch for {url}: expected sha256 {remote.sha256}, got {digest.hexdigest()}"
        )
    return target


def fetch_dataset(name: str, *, mirror: str | None = None, force: bool = False) -> Dataset:
    """Download, verify and import a public dataset into the user's dataset folder."""
    manifest = read_fetch_manifest(name)
    out = get_settings().user_datasets / name
    if out.exists() and not force:
        return load_dataset_dir(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{name}.fetch-") as scratch:
        prompts = download(manifest.prompts, Path(scratch, "prompts.txt"), mirror=mirror)
        references = [
            download(remote, Path(scratch, f"references-{i}.txt"), mirror=mirror)
            for i, remote in enumerate(manifest.references)
        ]
        fields = manifest.model_dump(include={"name", "version", "description", "source", "license", "citation"})
        staged = Path(scratch, "dataset")
        import_text(out=staged, prompts_path=prompts, reference_paths=references, manifest_fields=fields)
        # Only a complete, verified download replaces what was installed.
        if out.exists():
            shutil.rmtree(out)
        staged.rename(out)
    return load_dataset_dir(out)
