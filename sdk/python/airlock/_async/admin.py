"""What a tenant keeps besides its sandboxes (secrets, webhooks), the
server's templates, and the admin's tenants, keys and nodes."""

from __future__ import annotations

from typing import Any, Callable, Unpack

from .. import _types as t
from .. import errors
from .._codec import decode, params
from .._sse import SSEParser
from ._core import AsyncCore, query, seg
from .files import _chunks


class AsyncAdmin(AsyncCore):
    # Secrets.

    async def create_secret(self, **fields: Unpack[t.SecretRequestParams]) -> t.Secret:
        """Stores a secret (name, value, hosts, inject?, body?); sandboxes
        that bind it hold a placeholder and the egress proxy swaps in the
        value for its hosts only. The value is never returned."""
        return await self._json(t.Secret, "POST", "/v1/secrets", json=params(t.SecretRequest, fields))

    async def list_secrets(self) -> list[t.Secret]:
        return (await self._json(t.SecretList, "GET", "/v1/secrets")).secrets

    async def rotate_secret(self, name: str, **fields: Unpack[t.RotateSecretParams]) -> t.Secret:
        return await self._json(t.Secret, "PUT", "/v1/secrets/" + seg(name), json=params(t.RotateSecret, fields))

    async def delete_secret(self, name: str) -> None:
        await self._json(None, "DELETE", "/v1/secrets/" + seg(name))

    # Templates.

    async def list_templates(self) -> list[t.Template]:
        """The server's templates, base first."""
        return (await self._json(dict[str, list[t.Template]], "GET", "/v1/templates"))["templates"]

    async def get_template(self, name: str) -> t.Template:
        return await self._json(t.Template, "GET", "/v1/templates/" + seg(name))

    async def commit_template(self, progress: Callable[[t.ImageProgress], Any] | None = None,
                              **fields: Unpack[t.CommitTemplateParams]) -> t.Template:
        """Saves a build sandbox's /usr/local as a template (sandbox_id), or
        imports an OCI image (image), calling progress as layers download.
        Admin keys only."""
        return await self._template_stream("POST", "/v1/templates", json=params(t.CommitTemplate, fields),
                                           progress=progress)

    async def upload_image(self, name: str, tarball: Any, *, filename: str | None = None,
                           description: str | None = None,
                           progress: Callable[[t.ImageProgress], Any] | None = None) -> t.Template:
        """Makes the template name from a `docker save` or OCI layout
        tarball (bytes or a binary file object, streamed). Admin keys only."""
        content = tarball if isinstance(tarball, bytes) else _chunks(tarball)
        return await self._template_stream("PUT", "/v1/templates/" + seg(name) + "/image",
                                           params=query(filename=filename, description=description),
                                           content=content, progress=progress)

    async def _template_stream(self, method: str, path: str, *, progress: Any, **kw: Any) -> t.Template:
        hdr = {"Accept": "text/event-stream"}
        if "content" in kw:
            hdr["Content-Type"] = "application/x-tar"
        resp = await self._send(method, path, headers=hdr, stream=True, **kw)
        parser = SSEParser()
        try:
            if not resp.headers.get("content-type", "").startswith("text/event-stream"):
                await resp.aread()
                return decode(t.Template, resp.json(), "template")
            async for chunk in resp.aiter_bytes():
                for ev in parser.feed(chunk):
                    if ev.type == "progress" and progress is not None:
                        progress(decode(t.ImageProgress, ev.json(), "progress"))
                    elif ev.type == "template":
                        return decode(t.Template, ev.json(), "template")
                    elif ev.type == "error":
                        raise errors.from_detail(ev.json())
        finally:
            await resp.aclose()
        raise ConnectionError(f"{path}: the stream ended before the template")

    async def delete_template(self, name: str) -> None:
        await self._json(None, "DELETE", "/v1/templates/" + seg(name))

    # Webhooks.

    async def create_webhook(self, **fields: Unpack[t.WebhookRequestParams]) -> t.Webhook:
        """A webhook (url, events, secret?); the secret is shown only here."""
        return await self._json(t.Webhook, "POST", "/v1/webhooks", json=params(t.WebhookRequest, fields))

    async def list_webhooks(self) -> list[t.Webhook]:
        return (await self._json(t.WebhookList, "GET", "/v1/webhooks")).webhooks

    async def delete_webhook(self, id: str) -> None:
        await self._json(None, "DELETE", "/v1/webhooks/" + seg(id))

    async def webhook_deliveries(self, id: str, *, before: int | None = None,
                                 limit: int | None = None) -> list[t.Delivery]:
        """A webhook's deliveries, newest first."""
        q = query(before=before, limit=limit)
        return (await self._json(t.DeliveryList, "GET", "/v1/webhooks/" + seg(id) + "/deliveries", params=q)).deliveries

    # Tenants, keys, the server (admin keys).

    async def create_tenant(self, **fields: Unpack[t.TenantRequestParams]) -> t.Tenant:
        return await self._json(t.Tenant, "POST", "/v1/tenants", json=params(t.TenantRequest, fields))

    async def list_tenants(self) -> list[t.Tenant]:
        return (await self._json(t.TenantList, "GET", "/v1/tenants")).tenants

    async def update_tenant(self, name: str, **quota: Unpack[t.TenantQuotaUpdateParams]) -> t.Tenant:
        return await self._json(t.Tenant, "PATCH", "/v1/tenants/" + seg(name), json=params(t.TenantQuotaUpdate, quota))

    async def create_key(self, tenant: str, name: str | None = None) -> t.NewKey:
        """A new API key of tenant; the key is shown only here."""
        return await self._json(t.NewKey, "POST", "/v1/keys", json={"tenant": tenant, "name": name})

    async def list_keys(self) -> list[t.Key]:
        return (await self._json(t.KeyList, "GET", "/v1/keys")).keys

    async def delete_key(self, id: str) -> None:
        await self._json(None, "DELETE", "/v1/keys/" + seg(id))

    async def server_info(self) -> t.ServerInfo:
        return await self._json(t.ServerInfo, "GET", "/v1/server")

    async def ready(self) -> bool:
        """Whether this server takes API calls (GET /readyz)."""
        await self._send("GET", "/readyz")
        return True

    # Nodes (admin keys).

    async def create_join_token(self, ttl_s: int | None = None) -> t.JoinToken:
        return await self._json(t.JoinToken, "POST", "/v1/nodes/tokens", json={"ttl_s": ttl_s})

    async def list_nodes(self) -> list[t.Node]:
        return (await self._json(t.NodeList, "GET", "/v1/nodes")).nodes

    async def get_node(self, name: str) -> t.Node:
        return await self._json(t.Node, "GET", "/v1/nodes/" + seg(name))

    async def drain_node(self, name: str, drain: bool = True) -> t.Node:
        """Places no new sandboxes on the node (drain=False: again)."""
        return await self._json(t.Node, "POST" if drain else "DELETE", "/v1/nodes/" + seg(name) + "/drain")

    async def remove_node(self, name: str, *, force: bool = False) -> None:
        await self._json(None, "DELETE", "/v1/nodes/" + seg(name), params=query(force=force and "true"))

