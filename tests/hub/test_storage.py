"""Content-addressed storage behaves the same on a local folder and on a real local S3-compatible server."""

from __future__ import annotations

import hashlib

import pytest

from hub.storage import LocalStorage, S3Storage, storage_from_url


@pytest.fixture(scope="module")
def s3_server():
    """moto's standalone S3-compatible server on 127.0.0.1 (a real HTTP server, not an in-process mock)."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_storage(s3_server, monkeypatch):
    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket="hub-test")
    storage = storage_from_url("s3://hub-test/uploads", s3_endpoint_url=s3_server)
    assert isinstance(storage, S3Storage)
    return storage


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path):
    if request.param == "local":
        return storage_from_url(tmp_path.as_uri())
    return request.getfixturevalue("s3_storage")


def test_put_returns_the_sha256_and_get_returns_the_bytes(storage):
    data = b"one response per line\nsecond line\n"
    sha256 = storage.put(data)
    assert sha256 == hashlib.sha256(data).hexdigest()
    assert storage.exists(sha256)
    assert storage.get(sha256) == data


def test_same_bytes_are_stored_once(storage):
    assert storage.put(b"same") == storage.put(b"same")


def test_unknown_object_does_not_exist(storage):
    assert not storage.exists("0" * 64)


def test_local_objects_live_under_their_hash(tmp_path):
    storage = LocalStorage(tmp_path)
    sha256 = storage.put(b"abc")
    assert (tmp_path / "sha256" / sha256[:2] / sha256).read_bytes() == b"abc"
    assert [p.name for p in (tmp_path / "sha256" / sha256[:2]).iterdir()] == [sha256]  # no temp files left


def test_malformed_keys_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not a sha256"):
        LocalStorage(tmp_path).get("../../etc/passwd")


def test_unknown_scheme_is_refused():
    with pytest.raises(ValueError, match="file:///path or s3://bucket/prefix"):
        storage_from_url("ftp://example/x")
