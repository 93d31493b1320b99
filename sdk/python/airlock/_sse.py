"""A parser of text/event-stream, fed bytes as they arrive (no I/O, so the
blocking and the asyncio clients share it).

It follows the HTML standard: lines end in CRLF, LF or a lone CR; a blank
line dispatches; lines starting with ":" are comments (the server's
keep-alives); an event without data is not dispatched; an event cut off
by the end of the stream is dropped. One event is bounded, so a server
that never ends a line cannot make the client hold its whole answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_EVENT = 16 << 20


@dataclass(slots=True)
class SSEEvent:
    type: str  # "message" when the event named none
    data: str
    id: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


class SSEParser:
    def __init__(self) -> None:
        self._buf = b""
        self._first = True
        self._cr = False  # the last chunk ended in CR: a LF that follows belongs to it
        self._type = ""
        self._data: list[str] = []
        self._size = 0
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events that chunk completes."""
        if self._cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._cr = False
        buf = self._buf + chunk
        out: list[SSEEvent] = []
        start = 0
        while True:
            i = _line_end(buf, start)
            if i < 0:
                break
            line = buf[start:i]
            if buf[i] == 13:  # CR
                if i + 1 < len(buf):
                    start = i + 2 if buf[i + 1] == 10 else i + 1
                else:
                    start = i + 1
                    self._cr = True
            else:
                start = i + 1
            ev = self._line(line)
            if ev is not None:
                out.append(ev)
        self._buf = buf[start:]
        if len(self._buf) > MAX_EVENT:
            raise ValueError("server-sent event larger than 16 MiB")
        return out

    def _line(self, raw: bytes) -> SSEEvent | None:
        line = raw.decode("utf-8", "replace")
        if self._first:
            line = line.removeprefix("\ufeff")
            self._first = False
        if not line:
            if not self._data:
                self._type = ""
                return None
            ev = SSEEvent(self._type or "message", "\n".join(self._data), self._id)
            self._type, self._data, self._size = "", [], 0
            return ev
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._type = value
        elif field == "data":
            self._size += len(value) + 1
            if self._size > MAX_EVENT:
                raise ValueError("server-sent event larger than 16 MiB")
            self._data.append(value)
        elif field == "id":
            self._id = value
        return None


def _line_end(buf: bytes, start: int) -> int:
    lf, cr = buf.find(b"\n", start), buf.find(b"\r", start)
    if lf < 0:
        return cr
    if cr < 0:
        return lf
    return min(lf, cr)
