"""Files of a sandbox, streamed both ways: an upload goes out as its
source yields it, a download comes in as it arrives, never whole in
memory unless asked for (read_file)."""

from __future__ import annotations

import os
from contextlib import aclosing
from typing import IO, Any, AsyncIterator

from .. import _types as t
from .._codec import decode
from ._core import AsyncCore, query, sandbox_path

CHUNK = 64 << 10


async def _chunks(data: Any) -> AsyncIterator[bytes]:
    """The bytes of a binary file object or an iterable of bytes."""
    if hasattr(data, "read"):
        while chunk := data.read(CHUNK):
            yield chunk
    elif hasattr(data, "__aiter__"):
        async for chunk in data:
            yield chunk
    else:
        for chunk in data:
            yield chunk


def _octal(mode: int | str | None) -> str | None:
    if mode is None or isinstance(mode, str):
        return mode
    return f"{mode & 0o777:04o}"


class AsyncFiles(AsyncCore):
    async def write_file(self, id: str, path: str, data: Any, *, mode: int | str | None = None) -> t.WriteResult:
        """Writes data to path in the sandbox, creating or replacing the
        file (and missing parent directories), with permissions mode
        (0o644 by default). data is bytes, a str (UTF-8), a binary file
        object or an iterable of bytes chunks; the last two are streamed."""
        if isinstance(data, str):
            data = data.encode()
        content = data if isinstance(data, (bytes, bytearray, memoryview)) else _chunks(data)
        resp = await self._send("PUT", sandbox_path(id, "/files"), params=query(path=path, mode=_octal(mode)),
                                content=content, headers={"Content-Type": "application/octet-stream"})
        return decode(t.WriteResult, resp.json())

    async def upload_file(self, id: str, local_path: str | os.PathLike[str], path: str, *,
                          mode: int | str | None = None) -> t.WriteResult:
        """Streams the local file local_path to path in the sandbox; mode
        defaults to the local file's permissions."""
        if mode is None:
            mode = os.stat(local_path).st_mode & 0o777
        with open(local_path, "rb") as f:
            return await self.write_file(id, path, f, mode=mode)

    async def read_file(self, id: str, path: str) -> bytes:
        """The whole file at path (see iter_file for large files)."""
        return await self._bytes(sandbox_path(id, "/files"), query(path=path))

    def iter_file(self, id: str, path: str, chunk_size: int | None = None) -> AsyncIterator[bytes]:
        """The file at path in pieces as they arrive. A file that changed
        while the server read it raises Conflict before the first piece,
        or breaks the stream before its announced length after it."""
        return self._iter_bytes(sandbox_path(id, "/files"), query(path=path), chunk_size)

    async def download_file(self, id: str, path: str, dest: str | os.PathLike[str] | IO[bytes]) -> int:
        """Streams the file at path into dest (a local path or a binary
        file object); returns the bytes written. A local file is written
        whole or not at all."""
        if hasattr(dest, "write"):
            return await self._copy_to(id, path, dest)  # type: ignore[arg-type]
        tmp = os.fspath(dest) + ".part"
        try:
            with open(tmp, "wb") as f:
                n = await self._copy_to(id, path, f)
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return n

    async def _copy_to(self, id: str, path: str, f: IO[bytes]) -> int:
        n = 0
        async with aclosing(self.iter_file(id, path)) as chunks:
            async for chunk in chunks:
                f.write(chunk)
                n += len(chunk)
        return n

    async def list_dir(self, id: str, path: str) -> list[t.FileEntry]:
        return (await self._json(t.FileList, "GET", sandbox_path(id, "/files"),
                                 params=query(path=path, list=True))).entries

    async def remove(self, id: str, path: str, *, recursive: bool = False) -> None:
        """Deletes a file or an empty directory; with recursive a directory
        and all it holds."""
        await self._json(None, "DELETE", sandbox_path(id, "/files"), params=query(path=path, recursive=recursive))

    async def mkdir(self, id: str, path: str, *, mode: int | str | None = None) -> None:
        await self._json(None, "POST", sandbox_path(id, "/files/mkdir"), json={"path": path, "mode": _octal(mode)})

    async def move(self, id: str, src: str, dst: str) -> None:
        """Renames src to dst inside the sandbox."""
        await self._json(None, "POST", sandbox_path(id, "/files/move"), json={"from": src, "to": dst})
