// What an admin key does (tenants, keys, nodes, the server's facts),
// another tenant's view of this one's sandbox, webhooks, and HTTP to a
// port a sandbox serves on.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Airlock, ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from "@airlockhq/sdk";
import { airlock, sandbox, until } from "./env.js";

test("tenants and keys: another tenant sees none of this one's sandboxes", async () => {
  const name = `sdk-${Date.now().toString(36)}`;
  const tenant = await airlock.admin.createTenant({ name, max_sandboxes: 3 });
  assert.equal(tenant.name, name);
  await assert.rejects(airlock.admin.createTenant({ name }), ConflictError);
  assert.ok((await airlock.admin.listTenants()).some((t) => t.name === name));
  assert.equal((await airlock.admin.updateTenant(name, { max_sandboxes: 5 })).max_sandboxes, 5);

  const key = await airlock.admin.createKey({ tenant: name, name: "sdk" });
  assert.match(key.key, /^alk_/);
  const other = new Airlock({ url: airlock.url, apiKey: key.key });
  const mine = await sandbox();
  await assert.rejects(other.sandboxes.get(mine.id), NotFoundError);
  await assert.rejects(other.sandbox(mine.id).exec("true"), NotFoundError);
  assert.deepEqual((await other.admin.listKeys()).map((k) => k.id), [key.id]);
  await assert.rejects(other.admin.listTenants(), ForbiddenError);

  // Webhooks, in the other tenant, where no event fires while it lives.
  const hook = await other.webhooks.create({ url: "https://hooks.example.test/airlock", events: ["sandbox.failed"] });
  assert.match(hook.secret ?? "", /^whsec_/);
  const listed = await other.webhooks.list();
  assert.deepEqual(listed.map((h) => h.id), [hook.id]);
  assert.equal(listed[0]!.secret, undefined, "the secret is shown only when made");
  assert.deepEqual(await other.webhooks.deliveries(hook.id), []);
  await other.webhooks.delete(hook.id);
  await assert.rejects(other.webhooks.deliveries(hook.id), NotFoundError);

  await airlock.admin.deleteKey(key.id);
  await assert.rejects(other.sandboxes.list(), UnauthorizedError);
});

test("the server's facts and nodes", async () => {
  const info = await airlock.admin.server();
  assert.ok(info.version !== "" && info.data_dir !== "" && info.agent_protocol >= 1);
  const join = await airlock.admin.createJoinToken({ ttl_s: 60 });
  assert.match(join.token, /^alj_/);
  assert.match(join.ca_hash, /^sha256:/);
  assert.ok(Array.isArray(await airlock.admin.listNodes()));
  await assert.rejects(airlock.admin.getNode("no-such-node"), NotFoundError);
});

test("HTTP to a port the sandbox serves on", async () => {
  const sb = await sandbox();
  await sb.files.write("site/index.html", "served from the sandbox");
  await sb.processes.start({ command: "python3 -m http.server 8000 --bind 127.0.0.1", cwd: "site" });
  const res = await until("the sandbox's server", async () => {
    const r = await sb.fetchPort(8000, "/index.html");
    if (r.status === 200) return r;
    await r.body?.cancel();
    return undefined;
  });
  assert.equal(await res.text(), "served from the sandbox");
  assert.equal(sb.portURL(8000, "x"), `${airlock.url}/v1/sandboxes/${sb.id}/ports/8000/x`);
  const none = await sb.fetchPort(8001);
  assert.equal(none.status, 502);
  await none.body?.cancel();
});
