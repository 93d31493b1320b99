"""The terminal protocol of GET .../sessions/{sid}/attach (docs/API.md,
*Terminals*) over a WebSocket, without I/O: wsproto (RFC 6455) frames
and unframes, this turns its events into terminal output, the end of
the terminal, or an answer that refused the upgrade. The blocking and
the asyncio Terminal drive it over their own sockets."""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (AcceptConnection, BytesMessage, CloseConnection, Ping, RejectConnection,
                            RejectData, Request, TextMessage)

from . import errors

MAX_MESSAGE = 16 << 20


@dataclass
class Endpoint:
    host: str
    port: int
    tls: ssl.SSLContext | None
    target: str  # path and query
    authority: str  # the Host header


def endpoint(base_url: str, path: str, verify: Any) -> Endpoint:
    u = urlsplit(base_url)
    tls = None
    if u.scheme == "https":
        if isinstance(verify, ssl.SSLContext):
            tls = verify
        elif isinstance(verify, str):
            tls = ssl.create_default_context(cafile=verify)
        else:
            tls = ssl.create_default_context()
            if verify is False:
                tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    port = u.port or (443 if u.scheme == "https" else 80)
    return Endpoint(u.hostname or "127.0.0.1", port, tls, u.path.rstrip("/") + path, u.netloc)


class TermProtocol:
    """Feed it what the socket reads; it says what to send back (pending)
    and what the terminal got (receive)."""

    def __init__(self, ep: Endpoint, api_key: str) -> None:
        self.ws = WSConnection(ConnectionType.CLIENT)
        hdrs = [(b"User-Agent", b"airlock-python")]
        if api_key:
            hdrs.append((b"Authorization", b"Bearer " + api_key.encode()))
        self._out = self.ws.send(Request(host=ep.authority, target=ep.target, extra_headers=hdrs))
        self.accepted = False
        self._reject_status = 0
        self._reject_body = b""
        self._bin: list[bytes] = []
        self._text: list[str] = []
        self.closed = False

    def pending(self) -> bytes:
        out, self._out = self._out, b""
        return out

    def receive(self, data: bytes) -> list[bytes | BaseException]:
        """Output pieces, and at the end the exception that says why it
        ended (TerminalEnded, an APIError, ConnectionError); b"" read from
        the socket is its end."""
        self.ws.receive_data(data or None)
        got: list[bytes | BaseException] = []
        for ev in self.ws.events():
            if isinstance(ev, AcceptConnection):
                self.accepted = True
            elif isinstance(ev, RejectConnection):
                self._reject_status = ev.status_code
                if not ev.has_body:
                    got.append(errors.from_answer(ev.status_code, b""))
            elif isinstance(ev, RejectData):
                self._reject_body += ev.data
                if ev.body_finished:
                    got.append(errors.from_answer(self._reject_status, self._reject_body))
            elif isinstance(ev, Ping):
                self._out += self.ws.send(ev.response())
            elif isinstance(ev, BytesMessage):
                self._bin.append(bytes(ev.data))
                if ev.message_finished:
                    got.append(b"".join(self._bin))
                    self._bin = []
            elif isinstance(ev, TextMessage):
                self._text.append(ev.data)
                if ev.message_finished:
                    got.extend(self._control("".join(self._text)))
                    self._text = []
            elif isinstance(ev, CloseConnection):
                if self.ws.state is not ConnectionState.CLOSED:
                    self._out += self.ws.send(ev.response())
                self.closed = True
                got.append(ConnectionError(f"the terminal's connection closed ({ev.code} {ev.reason})".strip()))
        if not data and not self.closed:
            self.closed = True
            got.append(ConnectionError("the terminal's connection was cut"))
        return got

    def _control(self, text: str) -> list[BaseException]:
        try:
            m = json.loads(text)
        except ValueError:
            return [errors.DecodeError(f"terminal: bad control message {text!r}")]
        if m.get("type") == "exit":
            return [errors.TerminalEnded(exited=True, exit_code=m.get("exit_code") or 0, signal=m.get("signal") or 0)]
        if m.get("type") == "error":
            if m.get("code") == "invalid_argument":
                # About a message this client sent: the terminal stays open.
                return [errors.from_detail(m, 400)]
            return [errors.TerminalEnded(exited=False, code=m.get("code", ""), message=m.get("message", ""))]
        return []

    def send_bytes(self, data: bytes) -> bytes:
        return self.ws.send(BytesMessage(data=data))

    def send_resize(self, cols: int, rows: int) -> bytes:
        return self.ws.send(TextMessage(data=json.dumps({"type": "resize", "cols": cols, "rows": rows})))

    def send_close(self) -> bytes:
        if self.ws.state is ConnectionState.OPEN:
            return self.ws.send(CloseConnection(code=1000, reason="detached"))
        return b""
