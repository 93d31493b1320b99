"""The I/O the asyncio client does outside httpx: sleeping, and the
socket a terminal's WebSocket runs on. Written by hand; _sync/_backend.py
is its blocking twin (gen.py generates the rest of _sync from _async)."""

from __future__ import annotations

import asyncio

from .._terminal import Endpoint


async def sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


class Stream:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._r, self._w = reader, writer

    async def read(self) -> bytes:
        """Some bytes, or b"" at the end."""
        try:
            return await self._r.read(64 << 10)
        except (ConnectionError, OSError):
            return b""

    async def write(self, data: bytes) -> None:
        if data:
            self._w.write(data)
            await self._w.drain()

    async def close(self) -> None:
        self._w.close()
        try:
            await self._w.wait_closed()
        except (ConnectionError, OSError):
            pass


async def connect(ep: Endpoint, timeout: float) -> Stream:
    r, w = await asyncio.wait_for(
        asyncio.open_connection(ep.host, ep.port, ssl=ep.tls, server_hostname=ep.host if ep.tls else None,
                                limit=1 << 20), timeout)
    return Stream(r, w)
