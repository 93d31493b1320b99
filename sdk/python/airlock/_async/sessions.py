"""Sessions (a bash kept between calls) and their terminals (a WebSocket
to the session's PTY)."""

from __future__ import annotations

from typing import Any, AsyncIterator, Unpack

from .. import _types as t
from .. import errors
from .._codec import params
from .._terminal import TermProtocol, endpoint
from . import _backend
from ._core import AsyncCore, sandbox_path, seg


class AsyncTerminal:
    """A connection to a session's terminal. read returns output in order:
    first the session's recent scrollback, then what it prints next;
    iterating yields the same until the shell exits. Several terminals
    may attach to one session. Closing detaches and leaves the shell
    running. The server pings every 15 s and drops a client that has not
    answered within 30: keep reading while attached."""

    def __init__(self, stream: _backend.Stream, proto: TermProtocol, offset: int, queue: list[Any]) -> None:
        self._stream, self._proto, self._queue = stream, proto, queue
        self._offset = offset
        #: Why the terminal ended (TerminalEnded), once it has.
        self.ended: errors.TerminalEnded | None = None

    @property
    def offset(self) -> int:
        """Where in the terminal's output the bytes read so far end: pass
        it to attach_session to go on after a lost connection."""
        return self._offset

    async def read(self) -> bytes:
        """The next piece of output. Raises TerminalEnded at the end, an
        APIError (Invalid) for a control message the server refused, and
        ConnectionError when the connection is lost."""
        if self.ended is not None:
            raise self.ended
        while not self._queue:
            if self._proto.closed:
                raise self.ended or ConnectionError("the terminal is closed")
            data = await self._stream.read()
            self._queue.extend(self._proto.receive(data))
            await self._stream.write(self._proto.pending())
        item = self._queue.pop(0)
        if isinstance(item, bytes):
            self._offset += len(item)
            return item
        if isinstance(item, (errors.TerminalEnded, ConnectionError)):
            if isinstance(item, errors.TerminalEnded):
                self.ended = item
            self._queue.clear()  # the close that follows the end says no more
            self._proto.closed = True
            await self._stream.close()
        raise item

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[bytes]:
        while True:
            try:
                yield await self.read()
            except errors.TerminalEnded:
                return

    async def write(self, data: bytes | str) -> None:
        """Types data into the terminal."""
        if isinstance(data, str):
            data = data.encode()
        await self._stream.write(self._proto.send_bytes(data))

    async def resize(self, cols: int, rows: int) -> None:
        await self._stream.write(self._proto.send_resize(cols, rows))

    async def aclose(self) -> None:
        """Detaches, leaving the shell running."""
        if not self._proto.closed:
            self._proto.closed = True
            try:
                await self._stream.write(self._proto.send_close())
            except OSError:
                pass
        await self._stream.close()

    async def __aenter__(self) -> AsyncTerminal:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class AsyncSessions(AsyncCore):
    async def create_session(self, id: str, **fields: Unpack[t.SessionRequestParams]) -> t.Session:
        """Starts a bash in the sandbox: mode "exec" (the default, driven
        by session_exec) or "interactive" (for a person at its terminal)."""
        return await self._json(t.Session, "POST", sandbox_path(id, "/sessions"), json=params(t.SessionRequest, fields))

    async def list_sessions(self, id: str) -> list[t.Session]:
        return (await self._json(t.SessionList, "GET", sandbox_path(id, "/sessions"))).sessions

    async def session_exec(self, id: str, sid: str, command: str, *, timeout_s: int | None = None) -> t.SessionExecResult:
        """Runs command in the session's shell: cd, variables and an
        activated virtualenv persist between calls. On timeout (default
        60 s) the command gets SIGINT and the shell goes on."""
        return await self._json(t.SessionExecResult, "POST", sandbox_path(id, "/sessions/" + seg(sid) + "/exec"),
                                json={"command": command, "timeout_s": timeout_s})

    async def delete_session(self, id: str, sid: str) -> None:
        await self._json(None, "DELETE", sandbox_path(id, "/sessions/" + seg(sid)))

    async def session_cast(self, id: str, sid: str) -> str:
        """The session's terminal as an asciicast (v2), input included."""
        return (await self._bytes(sandbox_path(id, "/sessions/" + seg(sid) + "/cast"))).decode()

    async def attach_session(self, id: str, sid: str, *, offset: int = 0, timeout: float = 30.0) -> AsyncTerminal:
        """Connects to the session's terminal, from byte offset of its
        output on (a client that lost its connection passes its offset and
        goes on without the scrollback it has shown)."""
        path = sandbox_path(id, "/sessions/" + seg(sid) + "/attach") + (f"?offset={int(offset)}" if offset else "")
        ep = endpoint(self.url, path, self._verify)
        stream = await _backend.connect(ep, timeout)
        try:
            proto = TermProtocol(ep, self.api_key)
            await stream.write(proto.pending())
            queue: list[Any] = []
            while not proto.accepted:
                items = proto.receive(await stream.read())
                for item in items:
                    if isinstance(item, BaseException) and not proto.accepted:
                        raise item
                queue.extend(items)
            await stream.write(proto.pending())
        except BaseException:
            await stream.close()
            raise
        return AsyncTerminal(stream, proto, offset, queue)
