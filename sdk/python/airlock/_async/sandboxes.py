"""Sandboxes and their lifecycle: create, list, pause, resume, timeouts,
tokens, snapshots, forks, volumes, egress policy and metering."""

from __future__ import annotations

from datetime import datetime
from typing import Any, AsyncIterator, Mapping, Sequence, Unpack

from .. import _types as t
from .._codec import params
from ._core import AsyncCore, query, sandbox_path, seg


class AsyncSandboxContext:
    """A sandbox made on entering a with block and deleted on leaving it
    (whatever the block raised)."""

    def __init__(self, client: AsyncSandboxes, body: dict[str, Any]) -> None:
        self._client, self._body = client, body
        self.sandbox: t.Sandbox | None = None

    async def __aenter__(self) -> t.Sandbox:
        self.sandbox = await self._client._json(t.Sandbox, "POST", "/v1/sandboxes", json=self._body)
        return self.sandbox

    async def __aexit__(self, *exc: Any) -> None:
        if self.sandbox is not None:
            await self._client.delete_sandbox(self.sandbox.id)


class AsyncSandboxes(AsyncCore):
    async def create_sandbox(self, **fields: Unpack[t.CreateSandboxParams]) -> t.Sandbox:
        """Creates a sandbox and returns it once it runs. Every field is
        optional (template "base", 1 CPU, 512 MiB, 300 s...)."""
        return await self._json(t.Sandbox, "POST", "/v1/sandboxes", json=params(t.CreateSandbox, fields))

    def sandbox(self, **fields: Unpack[t.CreateSandboxParams]) -> AsyncSandboxContext:
        """A sandbox for a with block: created on entry, deleted on exit."""
        return AsyncSandboxContext(self, params(t.CreateSandbox, fields))

    async def get_sandbox(self, id: str) -> t.Sandbox:
        return await self._json(t.Sandbox, "GET", sandbox_path(id))

    async def list_sandboxes(self, *, state: str | None = None, metadata: Mapping[str, str] | None = None,
                             limit: int | None = None, after: str | None = None) -> t.SandboxList:
        """One page of the caller's sandboxes, ids ascending; pass its
        next as after for the next page (iter_sandboxes does)."""
        q = query(state=state, limit=limit, after=after)
        for k, v in (metadata or {}).items():
            q["metadata." + k] = v
        return await self._json(t.SandboxList, "GET", "/v1/sandboxes", params=q)

    async def iter_sandboxes(self, *, state: str | None = None, metadata: Mapping[str, str] | None = None,
                             page_size: int | None = None) -> AsyncIterator[t.Sandbox]:
        """Every sandbox of the caller, page by page."""
        after = None
        while True:
            page = await self.list_sandboxes(state=state, metadata=metadata, limit=page_size, after=after)
            for sb in page.sandboxes:
                yield sb
            if not page.next:
                return
            after = page.next

    async def delete_sandbox(self, id: str) -> None:
        await self._json(None, "DELETE", sandbox_path(id))

    async def set_timeout(self, id: str, timeout_s: int) -> t.Sandbox:
        """Makes the sandbox expire timeout_s seconds from now."""
        return await self._json(t.Sandbox, "POST", sandbox_path(id, "/timeout"), json={"timeout_s": timeout_s})

    async def pause_sandbox(self, id: str) -> t.Sandbox:
        """Freezes every process of the sandbox; its memory is kept and its
        lifetime clock stops until resume_sandbox."""
        return await self._json(t.Sandbox, "POST", sandbox_path(id, "/pause"))

    async def resume_sandbox(self, id: str) -> t.Sandbox:
        return await self._json(t.Sandbox, "POST", sandbox_path(id, "/resume"))

    async def create_token(self, id: str, ttl_s: int) -> t.Token:
        """A credential ("alt_...") for this sandbox only, valid ttl_s
        seconds: hand it to an agent that must not reach other sandboxes."""
        return await self._json(t.Token, "POST", sandbox_path(id, "/tokens"), json={"ttl_s": ttl_s})

    # Snapshots, forks and volumes.

    async def create_snapshot(self, id: str, name: str | None = None) -> t.Snapshot:
        return await self._json(t.Snapshot, "POST", sandbox_path(id, "/snapshots"), json={"name": name})

    async def list_snapshots(self) -> list[t.Snapshot]:
        return (await self._json(t.SnapshotList, "GET", "/v1/snapshots")).snapshots

    async def get_snapshot(self, name: str) -> t.Snapshot:
        return await self._json(t.Snapshot, "GET", "/v1/snapshots/" + seg(name))

    async def delete_snapshot(self, name: str) -> None:
        await self._json(None, "DELETE", "/v1/snapshots/" + seg(name))

    async def fork_sandbox(self, id: str, count: int = 1, **overrides: Any) -> list[t.Sandbox]:
        """count sandboxes whose files are this one's now; overrides are
        fields of create_sandbox that differ from the parent's."""
        body = params(t.ForkRequest, {"count": count, **overrides})
        return (await self._json(t.ForkResult, "POST", sandbox_path(id, "/fork"), json=body)).sandboxes

    async def create_volume(self, name: str, size_mb: int, node: str | None = None) -> t.Volume:
        return await self._json(t.Volume, "POST", "/v1/volumes",
                                json={"name": name, "size_mb": size_mb, "node": node})

    async def list_volumes(self) -> list[t.Volume]:
        return (await self._json(t.VolumeList, "GET", "/v1/volumes")).volumes

    async def get_volume(self, name: str) -> t.Volume:
        return await self._json(t.Volume, "GET", "/v1/volumes/" + seg(name))

    async def delete_volume(self, name: str) -> None:
        await self._json(None, "DELETE", "/v1/volumes/" + seg(name))

    # Egress.

    async def get_network(self, id: str) -> t.NetworkPolicy:
        return await self._json(t.NetworkPolicy, "GET", sandbox_path(id, "/network"))

    async def set_network(self, id: str, **policy: Unpack[t.NetworkPolicyParams]) -> t.NetworkPolicy:
        """Replaces a running sandbox's egress policy (mode "none" or
        "allowlist", allow, deny); new connections follow it at once."""
        return await self._json(t.NetworkPolicy, "PUT", sandbox_path(id, "/network"),
                                json=params(t.NetworkPolicy, policy))

    async def network_log(self, id: str, *, after: int | None = None, limit: int | None = None) -> list[t.NetEvent]:
        """The sandbox's egress log, oldest first, from seq after on."""
        q = query(after=after, limit=limit)
        return (await self._json(t.NetEventList, "GET", sandbox_path(id, "/network/log"), params=q)).events

    # Metering.

    async def sandbox_metrics(self, id: str) -> t.SandboxMetrics:
        return await self._json(t.SandboxMetrics, "GET", sandbox_path(id, "/metrics"))

    async def sandbox_metrics_history(self, id: str) -> t.SandboxMetricsHistory:
        return await self._json(t.SandboxMetricsHistory, "GET", sandbox_path(id, "/metrics/history"))

    async def sandboxes_metrics(self, ids: Sequence[str]) -> list[t.SandboxMetrics]:
        """Metrics of up to 100 of the caller's sandboxes; ids it does not
        own are left out."""
        out = await self._json(dict[str, list[t.SandboxMetrics]], "GET", "/v1/sandboxes/metrics",
                               params=query(ids=list(ids)))
        return out["metrics"]

    async def usage(self, *, from_: datetime | str | None = None, to: datetime | str | None = None,
                    tenant: str | None = None) -> t.UsageReport:
        """Usage per tenant of the sandboxes created in [from_, to)."""
        return await self._json(t.UsageReport, "GET", "/v1/usage", params=query(from_=from_, to=to, tenant=tenant))
