"""The fake server's Files API: ``POST /files``, ``GET /files``, ``GET /files/{id}``,
``DELETE /files/{id}`` (with or without ``/v1``), as shared/reference/deepseek-api.md, "Files
API", documents them.

What it enforces on an upload (``multipart/form-data``):

- a ``purpose`` field, one of ``user_data`` (images), ``text_recognition`` and
  ``rich_layout_recognition`` (documents), and **before** the ``file`` field in the form;
- a ``file`` field with a file name of 1 to 512 characters;
- for ``user_data``: a JPEG, PNG, GIF or WebP told from the bytes, at most 64 MiB;
- optional ``expires_after[anchor]`` (only ``created_at``) with ``expires_after[seconds]`` in
  3600..2592000, both or neither; an expired file is gone (404, and unknown in a chat request);
- the per-user quotas of the 2026-09-18 copy: 10,000 files and 25 GiB (settable, so a test
  can reach them).

The answer is the documented file object ``{"id": "file-api-<32 hex>", "object": "file",
"bytes", "created_at", "filename", "purpose"}`` plus ``expires_at`` when an expiry was set.
Documents are not modelled: the fake cannot parse them, so a document purpose is answered with
a 400 that says so (a client test never passes for the wrong reason). The statuses of the
refusals are not documented: 400 for a bad form (like every invalid request), 404 for an
unknown id, the OpenAI-shaped error body throughout.

A chat request may then carry ``{"type": "file", "file_id": …}`` for an uploaded image
(:meth:`FakeFiles.image_info`, used by the request rules and the token count).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from reasonix.testing.deepseek_rules import Rejection, bad_request

if TYPE_CHECKING:
    from reasonix.images import ImageInfo

__all__ = [
    "DOCUMENT_PURPOSES",
    "EXPIRY_SECONDS",
    "FILE_PATHS",
    "FakeFiles",
    "RecordedUpload",
    "StoredFile",
    "is_files_path",
]

FILE_PATHS = ("/files", "/v1/files")
IMAGE_PURPOSE = "user_data"
DOCUMENT_PURPOSES = ("text_recognition", "rich_layout_recognition")
EXPIRY_SECONDS = (3600, 2_592_000)
MAX_FILENAME = 512
MAX_FILES = 10_000
MAX_STORED_BYTES = 25 * 1024**3
_DISPOSITION = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def is_files_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in FILE_PATHS)


@dataclass(frozen=True, slots=True)
class StoredFile:
    id: str
    filename: str
    purpose: str
    created_at: int
    data: bytes = field(repr=False)
    expires_at: int | None = None

    def to_api(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
        }
        if self.expires_at is not None:
            obj["expires_at"] = self.expires_at
        return obj


@dataclass
class RecordedUpload:
    """One ``POST /files``: the fields as received (names in form order), the status, the id
    issued (None when refused) and the refusal's message."""

    fields: list[str]
    status: int
    size: int = 0
    filename: str | None = None
    purpose: str | None = None
    file_id: str | None = None
    error: str | None = None


@dataclass
class _Part:
    name: str
    filename: str | None
    content: bytes


def _parse_multipart(content_type: str, raw: bytes) -> list[_Part]:
    """The parts of a ``multipart/form-data`` body, in order (a malformed body is a 400)."""
    kind, _, params = content_type.partition(";")
    if kind.strip().lower() != "multipart/form-data":
        raise bad_request(
            f"Content-Type must be multipart/form-data for a file upload, not {kind.strip()!r}"
        )
    boundary = None
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.lower() == "boundary":
            boundary = value.strip().strip('"')
    if not boundary:
        raise bad_request("the multipart/form-data body has no boundary")
    delimiter = b"--" + boundary.encode("latin-1")
    chunks = raw.split(delimiter)
    if len(chunks) < 3 or not chunks[-1].startswith(b"--"):
        raise bad_request("the multipart/form-data body is malformed (no closing boundary)")
    parts: list[_Part] = []
    for chunk in chunks[1:-1]:
        if not chunk.startswith(b"\r\n") or not chunk.endswith(b"\r\n"):
            raise bad_request("the multipart/form-data body is malformed")
        head, sep, content = chunk[2:-2].partition(b"\r\n\r\n")
        if not sep:
            raise bad_request("a multipart part has no header block")
        disposition = ""
        for line in head.decode("utf-8", "replace").split("\r\n"):
            key, _, value = line.partition(":")
            if key.strip().lower() == "content-disposition":
                disposition = value
        attrs = dict(_DISPOSITION.findall(disposition))
        if "name" not in attrs:
            raise bad_request("a multipart part has no Content-Disposition name")
        parts.append(_Part(attrs["name"], attrs.get("filename"), content))
    return parts


class FakeFiles:
    """The uploaded files of one fake server (see the module docstring). ``now`` is the
    clock expiry is judged by (a test may move it on)."""

    def __init__(self, *, now: Callable[[], float] = time.time) -> None:
        self.now = now
        self.max_files = MAX_FILES
        self.max_bytes = MAX_STORED_BYTES
        #: every upload attempt, in arrival order
        self.uploads: list[RecordedUpload] = []
        self._files: dict[str, StoredFile] = {}
        self._lock = threading.Lock()

    # -- lookups --------------------------------------------------------------------------------

    def get(self, file_id: str) -> StoredFile | None:
        """The file, unless it never existed, was deleted or has expired."""
        with self._lock:
            stored = self._files.get(file_id)
        if stored is None or (stored.expires_at is not None and stored.expires_at <= self.now()):
            return None
        return stored

    def image_info(self, file_id: str) -> ImageInfo | None:
        """The :class:`~reasonix.images.ImageInfo` of an uploaded image (None otherwise)."""
        from reasonix import images

        stored = self.get(file_id)
        if stored is None or stored.purpose != IMAGE_PURPOSE:
            return None
        return images.sniff(stored.data, limit=images.MAX_FILE_IMAGE_BYTES)

    def live(self) -> list[StoredFile]:
        with self._lock:
            files = list(self._files.values())
        return [f for f in files if self.get(f.id) is not None]

    # -- HTTP -----------------------------------------------------------------------------------

    def upload(self, headers: Mapping[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
        record = RecordedUpload([], 200, len(raw))
        with self._lock:
            self.uploads.append(record)
        try:
            stored = self._accept(headers, raw, record)
        except Rejection as rejection:
            record.status, record.error = rejection.status, rejection.message
            return rejection.status, rejection.body()
        record.file_id = stored.id
        return 200, stored.to_api()

    def _accept(self, headers: Mapping[str, str], raw: bytes, record: RecordedUpload) -> StoredFile:
        from reasonix import images

        parts = _parse_multipart(headers.get("content-type", ""), raw)
        record.fields = [p.name for p in parts]
        by_name = {p.name: p for p in parts}
        names = record.fields
        if "purpose" not in by_name:
            raise bad_request("purpose is required", "purpose")
        purpose = by_name["purpose"].content.decode("utf-8", "replace")
        record.purpose = purpose
        if purpose not in (IMAGE_PURPOSE, *DOCUMENT_PURPOSES):
            raise bad_request(
                f"purpose {purpose!r} is not one of user_data, text_recognition, "
                "rich_layout_recognition",
                "purpose",
            )
        if "file" not in by_name or by_name["file"].filename is None:
            raise bad_request("file is required (a form field with a file name)", "file")
        if names.index("purpose") > names.index("file"):
            raise bad_request("purpose must come before file in the form", "purpose")
        upload = by_name["file"]
        filename = upload.filename or ""
        record.filename = filename
        if not 1 <= len(filename) <= MAX_FILENAME:
            raise bad_request(f"the file name must be 1 to {MAX_FILENAME} characters", "file")
        if purpose in DOCUMENT_PURPOSES:
            raise bad_request(
                "FakeDeepSeekServer models image uploads (purpose=user_data) only: it cannot "
                "parse documents",
                "purpose",
            )
        try:
            images.sniff(
                upload.content, what="the uploaded file", limit=images.MAX_FILE_IMAGE_BYTES
            )
        except images.ImageError as exc:
            raise bad_request(str(exc), "file") from None
        expires_at = self._expiry(by_name)
        now = self.now()
        created = int(now)
        stored = StoredFile(
            "file-api-" + secrets.token_hex(16),
            filename,
            purpose,
            created,
            upload.content,
            None if expires_at is None else created + expires_at,
        )
        with self._lock:
            live = [f for f in self._files.values() if f.expires_at is None or f.expires_at > now]
            if len(live) >= self.max_files:
                raise bad_request(f"file quota reached: at most {self.max_files:,} files")
            if sum(len(f.data) for f in live) + len(stored.data) > self.max_bytes:
                raise bad_request(f"storage quota reached: at most {self.max_bytes:,} bytes")
            self._files[stored.id] = stored
        return stored

    @staticmethod
    def _expiry(by_name: Mapping[str, _Part]) -> int | None:
        anchor = by_name.get("expires_after[anchor]")
        seconds = by_name.get("expires_after[seconds]")
        if anchor is None and seconds is None:
            return None
        if anchor is None or seconds is None:
            raise bad_request("expires_after needs both anchor and seconds", "expires_after")
        if anchor.content != b"created_at":
            raise bad_request("expires_after[anchor] must be created_at", "expires_after")
        low, high = EXPIRY_SECONDS
        try:
            value = int(seconds.content)
        except ValueError:
            value = -1
        if not low <= value <= high:
            raise bad_request(
                f"expires_after[seconds] must be an integer in [{low}, {high}]", "expires_after"
            )
        return value

    def answer_get(self, path: str, query: str) -> tuple[int, dict[str, Any]]:
        file_id = self._id_of(path)
        if file_id is not None:
            stored = self.get(file_id)
            if stored is None:
                return _not_found(file_id)
            return 200, stored.to_api()
        args = {k: v[-1] for k, v in parse_qs(query).items()}
        try:
            limit = int(args.get("limit", "1000"))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 1000:
            return _pair(bad_request("limit must be an integer in [1, 1000]", "limit"))
        order = args.get("order", "desc")
        if order not in ("asc", "desc"):
            return _pair(bad_request("order must be asc or desc", "order"))
        files = sorted(self.live(), key=lambda f: (f.created_at, f.id), reverse=order == "desc")
        if "purpose" in args:
            files = [f for f in files if f.purpose == args["purpose"]]
        after = args.get("after")
        if after is not None:
            ids = [f.id for f in files]
            files = files[ids.index(after) + 1 :] if after in ids else []
        page = files[:limit]
        return 200, {
            "object": "list",
            "data": [f.to_api() for f in page],
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
            "has_more": len(files) > len(page),
        }

    def answer_delete(self, path: str) -> tuple[int, dict[str, Any]]:
        file_id = self._id_of(path)
        if file_id is None:
            return 404, Rejection(404, f"Not Found: {path}", code=None).body()
        if self.get(file_id) is None:
            return _not_found(file_id)
        with self._lock:
            del self._files[file_id]
        return 200, {"id": file_id, "object": "file", "deleted": True}

    @staticmethod
    def _id_of(path: str) -> str | None:
        for prefix in FILE_PATHS:
            if path.startswith(prefix + "/") and "/" not in path[len(prefix) + 1 :]:
                return path[len(prefix) + 1 :] or None
        return None


def _not_found(file_id: str) -> tuple[int, dict[str, Any]]:
    return 404, Rejection(404, f"No such file: {file_id}", code="file_not_found").body()


def _pair(rejection: Rejection) -> tuple[int, dict[str, Any]]:
    return rejection.status, rejection.body()
