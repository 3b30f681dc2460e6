"""Images for vision systems: the type comes from the bytes (a text file renamed .png is refused), the size is capped,
nothing refused is stored, and a stored image comes back as the data URL an endpoint takes."""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib

import pytest

from hub.errors import NotFound, PayloadTooLarge, UnprocessableInput
from hub.services.studies import images
from hub.storage import LocalStorage


def png(width: int = 2, height: int = 2, pad: int = 0) -> bytes:
    """A real PNG (RGB, every pixel red); `pad` bytes of an ancillary chunk make it as large as a test needs."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    extra = chunk(b"tEXt", b"Comment\x00" + b"x" * pad) if pad else b""
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + extra
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def storage(tmp_path):
    return LocalStorage(tmp_path / "files")


def test_a_valid_png_is_stored_and_read_back_as_a_data_url(storage):
    data = png()
    stored = images.store_image(storage, data)
    assert stored.mime == "image/png" and stored.size == len(data) and storage.get(stored.key) == data
    refs = images.message_images(storage, [stored.key, stored.key])
    assert refs == [{"key": stored.key, "mime": "image/png", "size": len(data)}]  # the same image once
    url = images.data_url(storage, refs[0])
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]) == data
    content = images.vision_content(storage, "What colour is this?", refs)
    assert content == [
        {"type": "text", "text": "What colour is this?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    assert images.vision_content(storage, "no picture", []) == "no picture"


@pytest.mark.parametrize(
    ("head", "mime"),
    [
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "image/jpeg"),
        (b"GIF89a\x01\x00\x01\x00", "image/gif"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
    ],
)
def test_other_accepted_types_are_recognised_by_their_bytes(storage, head, mime):
    assert images.store_image(storage, head + b"\x00" * 32).mime == mime


def test_an_image_over_the_size_cap_is_refused_and_not_stored(storage):
    data = png(pad=images.MAX_IMAGE_BYTES)
    with pytest.raises(PayloadTooLarge) as refused:
        images.store_image(storage, data, field="image")
    assert refused.value.status_code == 413 and refused.value.field == "image"
    assert f"{images.MAX_IMAGE_BYTES:,} bytes" in refused.value.message
    assert not (storage.root / "sha256").exists()


@pytest.mark.parametrize(
    "data", [b"just some notes, renamed notes.png\n", b"<svg xmlns='http://www.w3.org/2000/svg'/>", b""]
)
def test_a_file_that_is_not_an_accepted_image_is_refused_naming_the_field(storage, data):
    with pytest.raises(UnprocessableInput) as refused:
        images.store_image(storage, data, field="image")
    assert refused.value.field == "image"
    assert not (storage.root / "sha256").exists()


def test_an_id_naming_no_image_or_another_stored_file_is_refused_alike(storage):
    text_key = storage.put(b"a private submission's responses\n")
    missing = "0" * 64
    for key in (text_key, missing):
        with pytest.raises(NotFound) as refused:
            images.message_images(storage, [key])
        assert refused.value.field == "images[0]"
        assert refused.value.message == "no uploaded image has this id; upload the image first"
    for bad in ("../../etc/passwd", 12, "A" * 64):
        with pytest.raises(UnprocessableInput) as malformed:
            images.message_images(storage, [bad])
        assert malformed.value.field == "images[0]"
    key = images.store_image(storage, png()).key
    with pytest.raises(UnprocessableInput) as too_many:
        images.message_images(storage, [key] * (images.MAX_IMAGES_PER_MESSAGE + 1))
    assert too_many.value.field == "images"


# ---- over HTTP: a participant uploads, the conversation shows what was sent ----------------------------------------


@pytest.fixture
def client(hub_env):
    from fastapi.testclient import TestClient

    from hub.web.app import create_app

    with TestClient(create_app()) as client:
        yield client


def _participant_in_study(client, people, *, vision: bool):
    from tests.hub.conftest import auth
    from tests.hub.studies.helpers import join, study_body

    body = study_body("http://127.0.0.1:9/v1")
    body["systems"][0]["vision"] = vision
    study = client.post("/api/studies", json=body, headers=auth(people["admin"])).json()
    invite = client.post(f"/api/studies/{study['id']}/invites", json={}, headers=auth(people["admin"])).json()
    join(client, invite["token"])
    return study["id"]


def _upload(client, study_id: int, data: bytes, name: str = "photo.png", mime: str = "image/png"):
    return client.post(f"/api/studies/{study_id}/images", files={"image": (name, data, mime)})


def test_a_participant_uploads_a_png_and_bad_files_are_refused_naming_the_field(client, people):
    study_id = _participant_in_study(client, people, vision=True)
    data = png()
    stored = _upload(client, study_id, data)
    assert stored.status_code == 201, stored.text
    assert stored.json() == {"id": hashlib.sha256(data).hexdigest(), "mime": "image/png", "size": len(data)}

    renamed = _upload(client, study_id, b"meeting notes, not a picture\n", name="notes.png")
    assert renamed.status_code == 422 and renamed.json()["field"] == "image"
    assert "not an image the hub accepts" in renamed.json()["error"]

    big = _upload(client, study_id, png(pad=images.MAX_IMAGE_BYTES))
    assert big.status_code == 413 and big.json()["field"] == "image"

    no_token = client.post(
        f"/api/studies/{study_id}/images", files={"image": ("a.png", data, "image/png")}, headers={"X-CSRF-Token": ""}
    )
    assert no_token.status_code == 403  # the participant's cookie alone is not enough (CSRF)
    client.cookies.clear()
    assert _upload(client, study_id, data).status_code == 404  # a stranger sees no study


def test_a_study_without_a_vision_system_takes_no_images(client, people):
    study_id = _participant_in_study(client, people, vision=False)
    refused = _upload(client, study_id, png())
    assert refused.status_code == 422 and refused.json()["field"] == "image"


def test_uploads_from_one_address_are_rate_limited(client, people, monkeypatch):
    from hub.settings import get_settings

    study_id = _participant_in_study(client, people, vision=True)
    monkeypatch.setenv("HUB_STUDY_IMAGES_PER_CLIENT", "2/minute")
    get_settings.cache_clear()
    assert _upload(client, study_id, png()).status_code == 201
    assert _upload(client, study_id, b"not an image").status_code == 422  # a refused upload counts too
    limited = _upload(client, study_id, png())
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert "too many images" in limited.json()["error"]
    get_settings.cache_clear()
