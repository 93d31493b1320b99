"""A sandbox's audit log (read, verified, exported, replayed) and the
tenant's event stream."""

from __future__ import annotations

import json
from contextlib import aclosing
from datetime import datetime
from typing import AsyncIterator, Sequence

from .. import _types as t
from .. import errors
from .._codec import decode
from ._core import AsyncCore, query, sandbox_path


class AsyncAudit(AsyncCore):
    async def audit_log(self, id: str, *, types: Sequence[str] | None = None,
                        from_: datetime | str | None = None, to: datetime | str | None = None,
                        after: int | None = None, limit: int | None = None) -> AsyncIterator[t.AuditEvent]:
        """The events of the sandbox's log, oldest first, as they arrive
        (the answer is NDJSON, never held whole)."""
        q = query(type=list(types) if types else None, from_=from_, to=to, after=after, limit=limit)
        buf = b""
        async with aclosing(self._iter_bytes(sandbox_path(id, "/audit"), q)) as chunks:
            async for chunk in chunks:
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield decode(t.AuditEvent, json.loads(line), "audit event")
        if buf.strip():
            yield decode(t.AuditEvent, json.loads(buf), "audit event")

    async def audit_events(self, id: str, **selection: object) -> list[t.AuditEvent]:
        """audit_log as a list."""
        out = []
        async with aclosing(self.audit_log(id, **selection)) as events:  # type: ignore[arg-type]
            async for e in events:
                out.append(e)
        return out

    async def verify_audit(self, id: str) -> t.AuditVerify:
        """Has the server check the log against its hash chain."""
        return await self._json(t.AuditVerify, "GET", sandbox_path(id, "/audit/verify"))

    async def audit_export(self, id: str) -> bytes:
        """The whole log as a gzipped tar (manifest.json, signed;
        events.jsonl; casts/), for offline verification."""
        return await self._bytes(sandbox_path(id, "/audit/export"))

    def iter_audit_export(self, id: str) -> AsyncIterator[bytes]:
        """audit_export in pieces as they arrive."""
        return self._iter_bytes(sandbox_path(id, "/audit/export"))

    async def audit_key(self) -> dict[str, str]:
        """The key that signs the server's audit exports: alg, public_key
        (base64), fingerprint."""
        return await self._json(dict[str, str], "GET", "/v1/audit/key")

    async def audit_cast(self, id: str, exec_id: str | None = None) -> str:
        """An asciicast (v2) of one command's output (its exec id), or of
        the whole sandbox's."""
        return (await self._bytes(sandbox_path(id, "/audit/cast"), query(exec=exec_id))).decode()

    async def events(self, *, after: int | None = None, from_start: bool = False,
                     types: Sequence[str] | None = None) -> AsyncIterator[t.Event]:
        """The tenant's event stream: with after, the kept events after
        that id first, then live ones; with from_start every kept event;
        else live events only. It does not reconnect on its own: resume
        with the id of the last event got. A client too far behind gets
        StreamDropped; a server shutting down ends it with ConnectionError."""
        q = query(type=list(types) if types else None)
        hdr = {}
        if after:
            hdr["Last-Event-ID"] = str(after)
        elif from_start:
            q["after"] = "0"
        async with aclosing(self._sse("GET", "/v1/events", params=q, headers=hdr)) as evs:
            async for ev in evs:
                if ev.type == "dropped":
                    raise errors.from_detail(ev.json())
                yield decode(t.Event, ev.json(), "event")
