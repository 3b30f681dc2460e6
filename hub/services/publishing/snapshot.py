"""`chateval export` and the `publish_snapshot` job: a versioned public snapshot published to a folder or to S3, so
that a reader never sees half of one.

Folder `DIR`: the snapshot is built in `DIR/.tmp-XXXX/`, renamed whole into `DIR/<version>/` (one rename), then the
pointers move: `DIR/latest.json` (`{"version", "manifest", "manifest_sha256"}`, replaced atomically) and the symlink
`DIR/latest` (replaced atomically). A failure leaves no `.tmp-` folder and the pointers where they were.

S3 `s3://bucket/prefix`: the snapshot is built in a local temporary folder, then every file is uploaded under
`prefix/<version>/`, `manifest.json` last: the manifest is the commit point (a version without one is unfinished,
and readers ignore it), and `prefix/latest.json` is written only after it. Unchanged data has the same version:
publishing it again writes nothing but the pointers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from hub.db import get_engine
from hub.errors import BadRequest
from hub.services.publishing.public_snapshot import Built, Progress, build
from hub.settings import get_settings
from hub.storage import get_storage, s3_client

POINTER = "latest.json"
MEDIA_TYPES = {
    ".jsonl": "application/x-ndjson; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
    ".sqlite": "application/vnd.sqlite3",
}


@dataclass(frozen=True)
class Published:
    version: str
    location: str  # the version's folder or s3:// prefix
    files: list[str]
    reused: bool  # the same version was there already (unchanged data): only the pointers were written


def _pointer(built: Built, manifest_bytes: bytes) -> bytes:
    pointer = {
        "version": built.version,
        "manifest": f"{built.version}/manifest.json",
        "manifest_sha256": hashlib.sha256(manifest_bytes).hexdigest(),
    }
    return (json.dumps(pointer, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _replace_file(path: Path, data: bytes) -> None:
    staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    staged.write_bytes(data)
    staged.replace(path)


def _replace_symlink(path: Path, target: str) -> None:
    staged = path.with_name(f".{path.name}.{os.getpid()}.link")
    staged.unlink(missing_ok=True)
    staged.symlink_to(target, target_is_directory=True)
    staged.replace(path)


def publish_to_folder(root: Path, progress: Progress | None = None) -> Published:
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        staging.chmod(0o755)  # a public folder (mkdtemp makes it private)
        built = build(get_engine(), get_storage(), staging, progress)
        final = root / built.version
        reused = final.exists()
        if not reused:
            try:
                staging.replace(final)  # the whole snapshot appears at once
            except OSError:
                if not final.exists():
                    raise
                reused = True  # another export of the same data published it first
        manifest_bytes = (final / "manifest.json").read_bytes()
        _replace_file(root / POINTER, _pointer(built, manifest_bytes))
        _replace_symlink(root / "latest", built.version)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Published(built.version, str(final), built.files, reused)


def _bucket_prefix(s3_url: str) -> tuple[str, str]:
    parsed = urlparse(s3_url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise BadRequest(f"expected s3://bucket/prefix, not {s3_url!r}", field="out")
    return parsed.netloc, parsed.path.strip("/")


def publish_to_s3(s3_url: str, progress: Progress | None = None) -> Published:
    bucket, prefix = _bucket_prefix(s3_url)
    client = s3_client(get_settings().s3_endpoint_url)

    def key(name: str) -> str:
        return f"{prefix}/{name}" if prefix else name

    with tempfile.TemporaryDirectory(prefix="chateval-snapshot-") as scratch:
        folder = Path(scratch)
        built = build(get_engine(), get_storage(), folder, progress)
        manifest_key = key(f"{built.version}/manifest.json")
        reused = "Contents" in client.list_objects_v2(Bucket=bucket, Prefix=manifest_key, MaxKeys=1)
        if not reused:
            for done, name in enumerate(built.files):  # manifest.json last: the commit point
                if progress:
                    progress(f"upload {name}", done, len(built.files))
                extra = {"ContentType": MEDIA_TYPES.get(Path(name).suffix, "application/octet-stream")}
                client.upload_file(str(folder / name), bucket, key(f"{built.version}/{name}"), ExtraArgs=extra)
        manifest_bytes = (folder / "manifest.json").read_bytes()
        client.put_object(
            Bucket=bucket, Key=key(POINTER), Body=_pointer(built, manifest_bytes), ContentType=MEDIA_TYPES[".json"]
        )
    return Published(built.version, f"s3://{bucket}/{key(built.version)}", built.files, reused)


def publish_snapshot(target: str, progress: Progress | None = None) -> Published:
    """Publish a snapshot of the public data to a folder path or an s3://bucket/prefix URL."""
    if target.startswith("s3://"):
        return publish_to_s3(target, progress)
    if "://" in target:
        raise BadRequest(f"expected a folder or s3://bucket/prefix, not {target!r}", field="out")
    return publish_to_folder(Path(target), progress)
