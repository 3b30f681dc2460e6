"""Images participants send to vision systems: checked (size cap, type by its first bytes), kept in the hub's file
storage, and read back as data URLs for the endpoint.

An uploaded image is known by its storage key (the sha256 of its bytes): that is the id the upload answers with, the
id a message names, and what ChatMessage.images records (`{"key", "mime"}`). The type is taken from the bytes, never
from the file name or the declared content type, and taken again when an image is read back: the storage also holds
other files (submissions), and an id naming one of those is answered exactly like an id naming nothing.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

from hub.errors import NotFound, PayloadTooLarge, UnprocessableInput
from hub.storage import Storage

MAX_IMAGE_BYTES = 5 * 1024 * 1024  # OpenAI's limit is 20 MB; a data URL is a third larger than the file
MAX_IMAGES_PER_MESSAGE = 4
KEY = re.compile(r"[0-9a-f]{64}")
SIGNATURES: tuple[tuple[str, bytes, int], ...] = (  # (MIME type, bytes, offset)
    ("image/png", b"\x89PNG\r\n\x1a\n", 0),
    ("image/jpeg", b"\xff\xd8\xff", 0),
    ("image/gif", b"GIF87a", 0),
    ("image/gif", b"GIF89a", 0),
)
ACCEPTED = "PNG, JPEG, WebP or GIF"


@dataclass(frozen=True)
class StoredImage:
    key: str  # sha256 of the bytes, the storage key
    mime: str
    size: int

    def ref(self) -> dict[str, str | int]:
        """What a message records about the image."""
        return {"key": self.key, "mime": self.mime, "size": self.size}


def image_type(data: bytes) -> str | None:
    """The MIME type the bytes begin like (PNG, JPEG, GIF, WebP), or None."""
    for mime, signature, offset in SIGNATURES:
        if data[offset : offset + len(signature)] == signature:
            return mime
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def check_image(data: bytes, *, field: str = "image") -> str:
    """The image's MIME type; 413 over the size cap, 422 when empty or not one of the accepted types."""
    if len(data) > MAX_IMAGE_BYTES:
        raise PayloadTooLarge(
            f"the image is {len(data):,} bytes; images of at most {MAX_IMAGE_BYTES:,} bytes are accepted",
            field=field,
        )
    if not data:
        raise UnprocessableInput("the image file is empty", field=field)
    mime = image_type(data)
    if mime is None:
        raise UnprocessableInput(
            f"not an image the hub accepts (its content is not {ACCEPTED}, whatever the file is called)",
            field=field,
        )
    return mime


def store_image(storage: Storage, data: bytes, *, field: str = "image") -> StoredImage:
    """Check and store an uploaded image; nothing is stored when it is refused."""
    mime = check_image(data, field=field)
    return StoredImage(key=storage.put(data), mime=mime, size=len(data))


def _unknown(field: str) -> NotFound:
    return NotFound("no uploaded image has this id; upload the image first", field=field)


def stored_image(storage: Storage, key: object, *, field: str = "images") -> StoredImage:
    """The uploaded image `key` names; 404 naming `field` when there is none (or the key names another file)."""
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise UnprocessableInput("an image id is the 64 hex digits the upload answered with", field=field)
    if not storage.exists(key):
        raise _unknown(field)
    data = storage.get(key)
    mime = image_type(data)
    if mime is None or len(data) > MAX_IMAGE_BYTES:
        raise _unknown(field)
    return StoredImage(key=key, mime=mime, size=len(data))


def message_images(storage: Storage, ids: object, *, field: str = "images") -> list[dict[str, str | int]]:
    """The `images` of a new user message, from the upload ids the client sent: checked, at most
    MAX_IMAGES_PER_MESSAGE, duplicates kept once; what ChatMessage.images stores."""
    if ids is None:
        return []
    if not isinstance(ids, list):
        raise UnprocessableInput("a list of image ids", field=field)
    if len(ids) > MAX_IMAGES_PER_MESSAGE:
        raise UnprocessableInput(f"at most {MAX_IMAGES_PER_MESSAGE} images per message", field=field)
    refs: dict[str, dict[str, str | int]] = {}
    for index, key in enumerate(ids):
        image = stored_image(storage, key, field=f"{field}[{index}]")
        refs.setdefault(image.key, image.ref())
    return list(refs.values())


def image_bytes(storage: Storage, ref: dict) -> tuple[bytes, str]:
    """The bytes and MIME type of an image a message recorded (type taken from the bytes again)."""
    image = stored_image(storage, ref.get("key") if isinstance(ref, dict) else None)
    return storage.get(image.key), image.mime


def data_url(storage: Storage, ref: dict) -> str:
    """`data:image/...;base64,...` of an image a message recorded, as vision endpoints take it."""
    data, mime = image_bytes(storage, ref)
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def vision_content(storage: Storage, text: str, refs: list[dict]) -> str | list[dict]:
    """A user turn's `content` for an OpenAI-compatible chat request: the text alone, or (with images) the list of
    parts `[{"type": "text", ...}, {"type": "image_url", "image_url": {"url": data URL}}, ...]`."""
    if not refs:
        return text
    parts: list[dict] = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": data_url(storage, ref)}} for ref in refs]
    return parts
