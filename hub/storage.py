"""Content-addressed file storage (key = sha256 of the bytes): a local folder or an S3 bucket, same API."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import time
import urllib.parse
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from hub.errors import StorageUnavailable
from hub.settings import get_settings

log = logging.getLogger(__name__)
TEMPORARY_PREFIX = "tmp"  # tempfile's own prefix, so files left by earlier versions are recognised too
STALE_TEMPORARY_AFTER_S = 3600.0  # a write in progress touches its file within seconds; an hour-old one is dead


class Storage(Protocol):
    def put(self, data: bytes) -> str:
        """Store bytes; return their sha256. Storing the same bytes twice keeps one copy."""

    def get(self, sha256: str) -> bytes: ...

    def exists(self, sha256: str) -> bool: ...


def object_name(sha256: str) -> str:
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    return f"sha256/{sha256[:2]}/{sha256}"


class LocalStorage:
    def __init__(self, root: Path):
        self.root = root

    def path(self, sha256: str) -> Path:
        return self.root / object_name(sha256)

    def put(self, data: bytes) -> str:
        sha256 = hashlib.sha256(data).hexdigest()
        target = self.path(sha256)
        if target.exists():
            return sha256
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(target, data)
        except OSError as exc:  # read-only, full, missing or not a folder: the caller stores nothing
            log.error("cannot write to the file storage at %s: %s", self.root, exc)
            raise StorageUnavailable(
                f"the hub cannot store files right now ({exc.strerror or type(exc).__name__}); "
                "nothing was saved, try again later"
            ) from exc
        return sha256

    def remove_stale_temporary_files(self, older_than_s: float = STALE_TEMPORARY_AFTER_S) -> int:
        """Delete temporary files a killed process left beside the objects (not a live write: those are young)."""
        cutoff, removed = time.time() - older_than_s, 0
        objects = self.root / "sha256"
        for path in objects.glob(f"*/{TEMPORARY_PREFIX}*") if objects.is_dir() else []:
            with contextlib.suppress(FileNotFoundError):  # another process cleaning at the same time
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
        if removed:
            log.warning("removed %d stale temporary file(s) from %s", removed, objects)
        return removed

    def get(self, sha256: str) -> bytes:
        return self.path(sha256).read_bytes()

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).is_file()


def _write_atomically(target: Path, data: bytes) -> None:
    """Write beside the target and rename: a crash never leaves a half-written object under its name, and a
    failed write removes its temporary file."""
    handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=TEMPORARY_PREFIX, delete=False)  # noqa: SIM115 (closed below, unlinked on failure)
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        raise


class S3Storage:
    def __init__(self, bucket: str, prefix: str, client):
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client

    def key(self, sha256: str) -> str:
        return f"{self.prefix}/{object_name(sha256)}" if self.prefix else object_name(sha256)

    def put(self, data: bytes) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        sha256 = hashlib.sha256(data).hexdigest()
        try:
            if not self.exists(sha256):
                self.client.put_object(Bucket=self.bucket, Key=self.key(sha256), Body=data)
        except (BotoCoreError, ClientError) as exc:  # unreachable, refused, or out of retries
            log.error("cannot write to s3://%s/%s: %s", self.bucket, self.prefix, exc)
            raise StorageUnavailable(
                "the hub cannot store files right now; nothing was saved, try again later"
            ) from exc
        return sha256

    def get(self, sha256: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=self.key(sha256))["Body"].read()

    def exists(self, sha256: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self.key(sha256))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True


def s3_client(endpoint_url: str | None = None):
    """A boto3 S3 client whose standard retry mode retries throttling and transient errors with backoff."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint_url, config=Config(retries={"mode": "standard"}))


def storage_from_url(url: str, *, s3_endpoint_url: str | None = None) -> Storage:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme == "file":
        return LocalStorage(Path(urllib.parse.unquote(parsed.path)))
    if parsed.scheme == "s3":
        return S3Storage(parsed.netloc, parsed.path, s3_client(s3_endpoint_url))
    raise ValueError(f"HUB_STORAGE_URL must be file:///path or s3://bucket/prefix, not {url!r}")


@lru_cache
def get_storage() -> Storage:
    """The configured storage, opened once per process; a local folder is cleared of stale temporary files."""
    settings = get_settings()
    storage = storage_from_url(settings.resolved_storage_url, s3_endpoint_url=settings.s3_endpoint_url)
    if isinstance(storage, LocalStorage):
        storage.remove_stale_temporary_files()
    return storage
