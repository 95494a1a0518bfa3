"""The framing between a host and its sandboxed processes: a JSON header and raw blobs.

Why not pickle: the host reads what the sandbox writes, and unpickling bytes
written by a process that runs hostile code is code execution in the host.
JSON can only ever decode to plain data, and database images travel as raw
byte frames after the header, so nothing is base64-encoded or copied twice.

A message is one frame holding the JSON header (with ``"~blobs": n``) followed
by ``n`` raw frames; a frame is a 4-byte big-endian length and its payload.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from collections.abc import Sequence
from typing import Any

Message = tuple[dict[str, Any], list[bytes]]

MAX_FRAME = 1 << 30  # a database image over 1 GiB is not a tool environment
_LEN = struct.Struct(">I")
_BLOBS = "~blobs"


class ChannelClosed(EOFError):
    """The other side closed the channel (it exited or was killed)."""


class ProtocolError(ValueError):
    """The other side sent something that is not a message: treated like a crash."""


_JSON = json.JSONEncoder(separators=(",", ":"))  # one encoder: json.dumps makes one per call


def encode(header: dict[str, Any], blobs: Sequence[bytes] = ()) -> bytes:
    body = _JSON.encode({**header, _BLOBS: len(blobs)}).encode()
    parts = [_LEN.pack(len(body)), body]
    for blob in blobs:
        parts += [_LEN.pack(len(blob)), blob]
    return b"".join(parts)


def _decode_header(body: bytes) -> tuple[dict[str, Any], int]:
    try:
        header = json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"a header that is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("a header that is not a JSON object")
    count = header.pop(_BLOBS, 0)
    if not isinstance(count, int) or not 0 <= count <= 64:
        raise ProtocolError(f"a bad blob count {count!r}")
    return header, count


class FrameReader:
    """Incremental decoder: feed it whatever arrived, get back every complete message.

    Used on non-blocking sockets, so a sandbox that writes half a frame and
    stalls can never block the host's event loop.
    """

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_frame
        self._header: dict[str, Any] | None = None
        self._want = 0
        self._blobs: list[bytes] = []

    def feed(self, data: bytes) -> list[Message]:
        if not self._buf and self._header is None and len(data) >= 4:
            # the common case, one whole blob-less message: no copies into the buffer
            (n,) = _LEN.unpack_from(data)
            if len(data) == 4 + n and n <= self._max:
                header, count = _decode_header(data[4:])
                if count == 0:
                    return [(header, [])]
                self._header, self._want, self._blobs = header, count, []
                return []
        self._buf += data
        out: list[Message] = []
        while True:
            if len(self._buf) < 4:
                return out
            (n,) = _LEN.unpack_from(self._buf)
            if n > self._max:
                raise ProtocolError(f"a frame of {n} bytes (the limit is {self._max})")
            if len(self._buf) < 4 + n:
                return out
            payload = bytes(self._buf[4 : 4 + n])
            del self._buf[: 4 + n]
            if self._header is None:
                self._header, self._want = _decode_header(payload)
                self._blobs = []
            else:
                self._blobs.append(payload)
            if len(self._blobs) == self._want:
                out.append((self._header, self._blobs))
                self._header = None


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
        try:
            chunk = os.read(fd, min(n - len(buf), 1 << 20))
        except BlockingIOError:
            continue
        if not chunk:
            raise ChannelClosed("the other side closed the channel")
        buf += chunk
    return bytes(buf)


def _read_frame(fd: int, deadline: float | None, max_frame: int) -> bytes | None:
    head = _read_exact(fd, 4, deadline)
    if head is None:
        return None
    (n,) = _LEN.unpack(head)
    if n > max_frame:
        raise ProtocolError(f"a frame of {n} bytes (the limit is {max_frame})")
    return _read_exact(fd, n, deadline)


def read_message(
    fd: int, timeout: float | None = None, max_frame: int = MAX_FRAME
) -> Message | None:
    """The next message on ``fd``; None if ``timeout`` passes first (then the channel is
    out of step: the caller must discard it). Raises ChannelClosed or ProtocolError."""
    deadline = None if timeout is None else time.monotonic() + timeout
    body = _read_frame(fd, deadline, max_frame)
    if body is None:
        return None
    header, count = _decode_header(body)
    blobs: list[bytes] = []
    for _ in range(count):
        blob = _read_frame(fd, deadline, max_frame)
        if blob is None:
            return None
        blobs.append(blob)
    return header, blobs


def write_message(
    fd: int, header: dict[str, Any], blobs: Sequence[bytes] = (), timeout: float | None = None
) -> None:
    """Write one message; raises ChannelClosed if the reader is gone, TimeoutError if it
    stops reading for ``timeout`` seconds (works on blocking and non-blocking fds)."""
    view = memoryview(encode(header, blobs))
    deadline = None if timeout is None else time.monotonic() + timeout
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError("the other side stopped reading") from None
            select.select([], [fd], [], left)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ChannelClosed("the other side closed the channel") from exc
