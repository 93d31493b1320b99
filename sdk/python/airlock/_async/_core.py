"""The transport under every method of the client: one credential, one
server, JSON in and out, error answers raised as airlock.errors."""

from __future__ import annotations

import os
from typing import Any, AsyncIterator, Mapping, TypeVar
from urllib.parse import quote

import httpx

from .. import errors
from .._codec import decode, encode
from .._sse import SSEEvent, SSEParser

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:7070"
# Connecting may time out; reading may not by default: an exec or a
# stream lasts as long as its command.
DEFAULT_TIMEOUT = httpx.Timeout(None, connect=30.0)


def sandbox_path(id: str, suffix: str = "") -> str:
    """/v1/sandboxes/{id}, escaped so that an id cannot name another
    route ("../tenants")."""
    return "/v1/sandboxes/" + quote(id, safe="") + suffix


def seg(s: str | int) -> str:
    return quote(str(s), safe="")


def query(**q: Any) -> dict[str, str]:
    """Query parameters without the unset ones; True is "1"."""
    out = {}
    for k, v in q.items():
        if v is None or v is False:
            continue
        if v is True:
            v = "1"
        elif isinstance(v, (list, tuple)):
            v = ",".join(v)
        elif hasattr(v, "isoformat"):
            v = v.isoformat()
        out[k.rstrip("_")] = str(v)
    return out


class AsyncCore:
    """Talks to one Airlock server with one credential, an API key
    ("alk_...") or a sandbox token ("alt_...").

    url and api_key default to $AIRLOCK_URL (else http://127.0.0.1:7070)
    and $AIRLOCK_API_KEY, as for the airlock CLI. timeout bounds
    connecting (default 30 s); reads are unbounded unless it says
    otherwise, since execs and streams last as long as their commands.
    verify is httpx's (True, a CA bundle path or an ssl.SSLContext). The
    client never retries a request on its own: an exec or an upload is
    not idempotent. Close it (or use it in a with block) when done.
    """

    def __init__(self, url: str | None = None, api_key: str | None = None, *,
                 timeout: float | httpx.Timeout | None = None, verify: Any = True,
                 http_client: httpx.AsyncClient | None = None) -> None:
        self.url = (url or os.environ.get("AIRLOCK_URL") or DEFAULT_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("AIRLOCK_API_KEY", "")
        self._verify = verify
        self._own_http = http_client is None
        self._http = http_client or httpx.AsyncClient(
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout, verify=verify)

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self: T) -> T:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        h = {"User-Agent": "airlock-python"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        h.update(extra or {})
        return h

    async def _send(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                    json: Any = None, content: Any = None, headers: Mapping[str, str] | None = None,
                    stream: bool = False) -> httpx.Response:
        """The answer of a 2xx; any other becomes an APIError. With stream
        the body is left unread: the caller reads and closes it."""
        hdr = self._headers(headers)
        if json is not None:
            hdr["Content-Type"] = "application/json"
        req = self._http.build_request(
            method, self.url + path, params=params, headers=hdr,
            json=encode(json) if json is not None else None, content=content)
        resp = await self._http.send(req, stream=True)
        if resp.status_code // 100 != 2:
            try:
                body = await resp.aread()
            finally:
                await resp.aclose()
            raise errors.from_answer(resp.status_code, body, resp.reason_phrase)
        if not stream:
            try:
                await resp.aread()
            finally:
                await resp.aclose()
        return resp

    async def _json(self, tp: Any, method: str, path: str, **kw: Any) -> Any:
        """The answer decoded as tp (None: no answer is wanted)."""
        resp = await self._send(method, path, headers={"Accept": "application/json"}, **kw)
        if tp is None:
            return None
        return decode(tp, resp.json(), f"{method} {path}")

    async def _bytes(self, path: str, params: Mapping[str, str] | None = None) -> bytes:
        resp = await self._send("GET", path, params=params)
        return resp.content

    async def _iter_bytes(self, path: str, params: Mapping[str, str] | None = None,
                          chunk_size: int | None = None) -> AsyncIterator[bytes]:
        resp = await self._send("GET", path, params=params, stream=True)
        try:
            async for chunk in resp.aiter_bytes(chunk_size):
                yield chunk
        finally:
            await resp.aclose()

    async def _sse(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                   json: Any = None, headers: Mapping[str, str] | None = None) -> AsyncIterator[SSEEvent]:
        """The events of a text/event-stream answer. An "error" event is
        raised as the APIError it names; a stream that just ends is
        ConnectionError (the server went away)."""
        hdr = {"Accept": "text/event-stream", **(headers or {})}
        resp = await self._send(method, path, params=params, json=json, headers=hdr, stream=True)
        parser = SSEParser()
        try:
            async for chunk in resp.aiter_bytes():
                for ev in parser.feed(chunk):
                    if ev.type == "error":
                        raise errors.from_detail(ev.json())
                    yield ev
        finally:
            await resp.aclose()
        raise ConnectionError(f"the event stream of {path} ended early")

    async def health(self) -> bool:
        """Whether the server answers GET /healthz (no credential needed)."""
        await self._send("GET", "/healthz")
        return True
