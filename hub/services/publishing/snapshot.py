"""`chateval export`: every public download written to a folder or published to an S3 bucket, as one snapshot.

Each file is written whole to a temporary file first and only then renamed (or uploaded), so a failure never
leaves a half-written file under its final name. A `manifest.json` lists the files with their sha256.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from hub.db import get_engine
from hub.models.common import utcnow
from hub.services.publishing import exports
from hub.settings import get_settings
from hub.storage import get_storage, s3_client


def _write(name: str, folder: Path) -> tuple[Path, str]:
    export = exports.open_export(get_engine(), get_storage(), name)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile("wb", dir=folder, prefix=f".{name}.", delete=False) as handle:
        for chunk in export.chunks:
            data = chunk.encode("utf-8")
            digest.update(data)
            handle.write(data)
    return Path(handle.name), digest.hexdigest()


def write_snapshot(
    *, out_dir: Path | None = None, s3_url: str | None = None, progress: Callable[[str], None] | None = None
) -> list[str]:
    names = [f"{kind}.{fmt}" for kind in exports.FIELDS for fmt in exports.MEDIA_TYPES]
    with tempfile.TemporaryDirectory() as scratch:
        folder = out_dir if out_dir is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        files: dict[str, str] = {}
        staged: list[tuple[Path, str]] = []
        for name in names:
            path, sha = _write(name, folder)
            staged.append((path, name))
            files[name] = sha
        manifest = {"schema_version": exports.SCHEMA_VERSION, "created_at": utcnow().isoformat(), "files": files}
        manifest_path = folder / ".manifest.json.tmp"
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        staged.append((manifest_path, "manifest.json"))
        if s3_url is not None:
            _upload(staged, s3_url, progress)
        else:
            for path, name in staged:
                path.replace(folder / name)
                if progress:
                    progress(name)
    return [name for _, name in staged]


def _upload(staged: list[tuple[Path, str]], s3_url: str, progress: Callable[[str], None] | None) -> None:
    parsed = urlparse(s3_url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"expected s3://bucket/prefix, not {s3_url!r}")
    prefix = parsed.path.strip("/")
    client = s3_client(get_settings().s3_endpoint_url)
    for path, name in staged:  # the manifest goes last: readers who see it see every file it lists
        key = f"{prefix}/{name}" if prefix else name
        client.upload_file(str(path), parsed.netloc, key)
        path.unlink()
        if progress:
            progress(f"s3://{parsed.netloc}/{key}")
