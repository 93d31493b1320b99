// A sandbox's egress policy and log, and the tenant's secrets.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConflictError, InvalidError, NotFoundError } from "@airlockhq/sdk";
import { airlock, sandbox, until } from "./env.js";

test("network policy and log", async () => {
  const sb = await sandbox({ network: { mode: "allowlist", allow: ["allowed.test"] } });
  const policy = await sb.network.get();
  assert.equal(policy.mode, "allowlist");
  assert.deepEqual(policy.allow, ["allowed.test"]);
  const set = await sb.network.set({ mode: "allowlist", allow: ["allowed.test", "other.test:8080"], deny: ["denied.test"] });
  assert.deepEqual(set.allow, ["allowed.test", "other.test:8080"]);
  await assert.rejects(sb.network.set({ mode: "allowlist", allow: ["bad host name"] }), InvalidError);

  // A denied name is refused by the proxy without being looked up or
  // reached: nothing leaves this machine.
  const r = await sb.exec("curl -s -o /dev/null -w '%{http_code}' --max-time 20 http://denied.test/");
  assert.equal(r.stdout, "403");
  const log = await until("the denied request in the log", async () => {
    const evs = await sb.network.log();
    return evs.find((e) => e.host === "denied.test") ? evs : undefined;
  });
  const denied = log.find((e) => e.host === "denied.test")!;
  assert.equal(denied.decision, "denied");
  assert.equal(denied.port, 80);
  assert.deepEqual(await sb.network.log({ after: denied.seq }), log.filter((e) => e.seq > denied.seq));
});

test("secrets: create, list, rotate, bind, delete", async () => {
  const name = `SDK_${Date.now().toString(36).toUpperCase()}`;
  const s = await airlock.secrets.create({ name, value: "v1-value", hosts: ["api.example.test"], inject: { header: "Authorization", format: "Bearer {value}" } });
  assert.equal(s.name, name);
  assert.ok(!("value" in s), "a secret's value never comes back");
  await assert.rejects(airlock.secrets.create({ name, value: "x", hosts: ["api.example.test"] }), ConflictError);
  assert.ok((await airlock.secrets.list()).some((x) => x.name === name));
  const rotated = await airlock.secrets.rotate(name, { value: "v2-value" });
  assert.ok(rotated.rotated_at);

  // A bound secret is a placeholder in the sandbox, never its value.
  const sb = await sandbox({ secrets: [name], network: { mode: "allowlist", allow: [] } });
  const env = (await sb.exec(`printenv ${name}`)).stdout.trim();
  assert.ok(env !== "" && !env.includes("v2-value"), `the sandbox sees ${env}`);
  assert.ok((await sb.network.get()).allow?.includes("api.example.test"), "the secret's hosts join the allow-list");

  await sb.delete();
  await airlock.secrets.delete(name);
  await assert.rejects(airlock.secrets.delete(name), NotFoundError);
});
