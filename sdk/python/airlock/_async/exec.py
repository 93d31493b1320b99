"""Commands: one-shot exec, streamed exec that re-attaches when its stream
breaks, background processes, and the output of any command by its pid
or exec id."""

from __future__ import annotations

import base64
import time
from contextlib import aclosing
from typing import Any, AsyncIterator, Sequence, Unpack

import httpx

from .. import _types as t
from .. import errors
from .._codec import decode, params
from .._models import Output
from . import _backend
from ._core import AsyncCore, query, sandbox_path, seg

# How long a streamed exec tries to re-attach to its command after its
# stream broke (the server restarted, say).
RESUME_FOR = 60.0


def _exec_body(cmd: str | Sequence[str] | None, fields: dict[str, Any]) -> dict[str, Any]:
    """A str is a shell command ("command"), a sequence an argv ("cmd")."""
    if isinstance(cmd, str):
        fields["command"] = cmd
    elif cmd is not None:
        fields["cmd"] = list(cmd)
    return params(t.ExecRequest, fields)


def _exit(data: dict[str, Any]) -> t.ExecExit:
    data.pop("offset", None)
    return decode(t.ExecExit, data, "exit event")


def _retryable(e: BaseException) -> bool:
    """A stream cut by the server's going away, or refused while it is
    away: worth following again."""
    if isinstance(e, errors.APIError):
        return isinstance(e, errors.Unavailable)
    return isinstance(e, (httpx.TransportError, ConnectionError))


class AsyncOutputStream:
    """The output of a command (background process or exec id) from an
    offset on: iterate it for Output pieces. Afterwards next_offset is
    where to resume, exit how the command ended (None if it had not when
    a stream without follow ended) and dropped how many bytes the server
    no longer kept."""

    def __init__(self, client: AsyncCore, path: str, offset: int, follow: bool) -> None:
        self._client, self._path, self._follow = client, path, follow
        self.next_offset = offset
        self.exit: t.ExecExit | None = None
        self.dropped = 0

    def __aiter__(self) -> AsyncIterator[Output]:
        return self._events()

    async def _events(self) -> AsyncIterator[Output]:
        q = query(offset=self.next_offset, follow=self._follow)
        async with aclosing(self._client._sse("GET", self._path, params=q)) as events:
            async for ev in events:
                d = ev.json()
                if ev.type in ("stdout", "stderr"):
                    data = base64.b64decode(d["data"])
                    self.next_offset = d["offset"] + len(data)
                    yield Output(ev.type, data, d["offset"])
                elif ev.type == "dropped":
                    self.dropped += d.get("bytes", 0)
                elif ev.type == "end":
                    self.next_offset = d.get("offset", self.next_offset)
                    return
                elif ev.type == "exit":
                    self.next_offset = d.get("offset", self.next_offset)
                    self.exit = _exit(d)
                    return

    async def wait(self) -> t.ExecExit | None:
        """Reads to the end, dropping the output; returns exit."""
        async for _ in self:
            pass
        return self.exit


class AsyncExecStream:
    """A command whose output comes as it is printed, uncapped: iterate it
    for Output pieces; then result says how it ended. exec_id and pid are
    set once it started. When the stream breaks after that (a restart of
    the server), the command goes on, and the stream follows it again by
    its exec id for up to a minute, without losing or repeating output.
    The request is sent when iteration starts."""

    def __init__(self, client: AsyncExec, id: str, body: dict[str, Any]) -> None:
        self._client, self._id, self._body = client, id, body
        self.exec_id: str | None = None
        self.pid: int | None = None
        self.result: t.ExecExit | None = None
        self._received = 0

    def __aiter__(self) -> AsyncIterator[Output]:
        return self._events()

    async def _events(self) -> AsyncIterator[Output]:
        try:
            async with aclosing(self._client._sse("POST", sandbox_path(self._id, "/exec"), json=self._body)) as evs:
                async for ev in evs:
                    d = ev.json()
                    if ev.type == "start":
                        self.exec_id, self.pid = d.get("exec_id"), d.get("pid")
                    elif ev.type in ("stdout", "stderr"):
                        data = base64.b64decode(d["data"])
                        self._received += len(data)
                        yield Output(ev.type, data, self._received - len(data))
                    elif ev.type == "exit":
                        self.result = _exit(d)
                        return
        except Exception as e:
            if self.exec_id is None or not _retryable(e):
                raise
            cause = e
        async with aclosing(self._resume(cause)) as rest:
            async for out in rest:
                yield out

    async def _resume(self, cause: Exception) -> AsyncIterator[Output]:
        deadline, wait = time.monotonic() + RESUME_FOR, 0.1
        path = sandbox_path(self._id, "/execs/" + seg(self.exec_id or "") + "/output")
        while True:
            out = AsyncOutputStream(self._client, path, self._received, True)
            try:
                async for piece in out:
                    self._received = out.next_offset
                    yield piece
                self._received = out.next_offset
                if out.exit is not None:
                    self.result = out.exit
                    self.result.exec_id = self.exec_id
                    return
            except Exception as e:
                if not _retryable(e) or time.monotonic() > deadline:
                    raise e from cause
            await _backend.sleep(wait)
            wait = min(2 * wait, 2.0)

    async def wait(self) -> t.ExecExit:
        """Runs the command to its end, dropping its output."""
        async for _ in self:
            pass
        assert self.result is not None
        return self.result

    async def collect(self) -> tuple[bytes, bytes, t.ExecExit]:
        """Runs the command to its end: (stdout, stderr, how it ended)."""
        out: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
        async for piece in self:
            out[piece.stream].append(piece.data)
        assert self.result is not None
        return b"".join(out["stdout"]), b"".join(out["stderr"]), self.result


class AsyncExec(AsyncCore):
    async def exec(self, id: str, cmd: str | Sequence[str] | None = None, /,
                   **fields: Unpack[t.ExecRequestParams]) -> t.ExecResult:
        """Runs a command to its end: a str through the shell, a sequence
        as an argv. Output is capped at 1 MiB per stream (exec_stream is
        not)."""
        return await self._json(t.ExecResult, "POST", sandbox_path(id, "/exec"), json=_exec_body(cmd, dict(fields)))

    def exec_stream(self, id: str, cmd: str | Sequence[str] | None = None, /,
                    **fields: Unpack[t.ExecRequestParams]) -> AsyncExecStream:
        """A command whose output streams as it comes (see ExecStream)."""
        return AsyncExecStream(self, id, _exec_body(cmd, dict(fields)))

    async def start_process(self, id: str, cmd: str | Sequence[str] | None = None, /,
                            **fields: Unpack[t.ExecRequestParams]) -> t.Background:
        """Starts a command in the background and returns its pid at once;
        it outlives this call (and a restart of the server) and its output
        is kept (process_output)."""
        body = _exec_body(cmd, dict(fields))
        body["background"] = True
        return await self._json(t.Background, "POST", sandbox_path(id, "/exec"), json=body)

    async def list_processes(self, id: str) -> list[t.Process]:
        return (await self._json(t.ProcessList, "GET", sandbox_path(id, "/processes"))).processes

    def process_output(self, id: str, pid: int, *, offset: int = 0, follow: bool = False) -> AsyncOutputStream:
        """A background process's output from offset on; with follow until
        it ends."""
        return AsyncOutputStream(self, sandbox_path(id, f"/processes/{int(pid)}/output"), offset, follow)

    async def get_exec(self, id: str, exec_id: str) -> t.ExecInfo:
        """Any command the sandbox ran, by exec id: running, or how it ended."""
        return await self._json(t.ExecInfo, "GET", sandbox_path(id, "/execs/" + seg(exec_id)))

    def exec_output(self, id: str, exec_id: str, *, offset: int = 0, follow: bool = False) -> AsyncOutputStream:
        """process_output by exec id: re-attaches to a streamed command
        whose stream broke, or reads a background one."""
        return AsyncOutputStream(self, sandbox_path(id, "/execs/" + seg(exec_id) + "/output"), offset, follow)

    async def write_stdin(self, id: str, pid: int, data: bytes | str) -> int:
        """Writes data to a background process's stdin; returns the bytes
        written."""
        if isinstance(data, str):
            data = data.encode()
        resp = await self._send("POST", sandbox_path(id, f"/processes/{int(pid)}/stdin"), content=data,
                                headers={"Content-Type": "application/octet-stream"})
        return int(resp.json()["bytes"])

    async def close_stdin(self, id: str, pid: int) -> None:
        await self._json(None, "POST", sandbox_path(id, f"/processes/{int(pid)}/stdin/close"))

    async def signal_process(self, id: str, pid: int, signal: str | int = "TERM") -> None:
        """Sends a signal ("TERM", "SIGKILL", 9) to a background process."""
        await self._json(None, "POST", sandbox_path(id, f"/processes/{int(pid)}/signal"),
                         json={"signal": str(signal)})
