// Approvals: a connection the sandbox's policy asks about is held until a
// person decides; denied, the command gets the proxy's 403. Nothing leaves
// this machine: the only decision made is deny, which the proxy answers
// without looking the name up.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Airlock, ConflictError, ForbiddenError, InvalidError, NotFoundError, type schema } from "@airlockhq/sdk";
import { airlock, sandbox, until } from "./env.js";

test("approvals: an egress ask held, listed, waited on, denied once", async () => {
  // A tenant of its own, whose key is the person deciding; the suite's
  // admin key is another tenant's, which must not see the approval.
  const tenant = `apr-${Date.now().toString(36)}`;
  await airlock.admin.createTenant({ name: tenant });
  const key = await airlock.admin.createKey({ tenant, name: "approver" });
  const person = new Airlock({ url: airlock.url, apiKey: key.key });

  const ac = new AbortController();
  const events = await person.events({ types: ["approval.requested", "approval.decided"], signal: ac.signal });
  const sb = await sandbox({ network: { mode: "allowlist", allow: [], ask: true, ask_timeout_s: 60 } }, person);
  const curl = await sb.processes.start("curl -s -i --max-time 60 http://denied.test/");
  const held = await until("a pending approval", async () => (await person.approvals.list({ state: "pending" })).find((a) => a.sandbox_id === sb.id));
  assert.equal(held.kind, "egress");
  assert.equal(held.state, "pending");
  assert.deepEqual(held.egress, { host: "denied.test", port: 80, protocol: "http" });
  assert.ok(Date.parse(held.deadline) > Date.parse(held.requested_at));
  assert.deepEqual(await person.approvals.get(held.id), held);
  assert.deepEqual((await sb.processes.list()).map((p) => p.state), ["running"], "curl is held");

  await assert.rejects(airlock.approvals.get(held.id), NotFoundError);
  assert.ok(!(await airlock.approvals.list()).some((a) => a.id === held.id), "another tenant lists it");
  // An agent must not approve its own request.
  const agent = new Airlock({ url: airlock.url, apiKey: (await sb.createToken(60)).token });
  await assert.rejects(agent.approvals.decide(held.id, { decision: "deny" }), ForbiddenError);
  await assert.rejects(agent.approvals.list(), ForbiddenError);
  await assert.rejects(person.approvals.decide(held.id, { decision: "maybe" as "deny" }), InvalidError);

  const waited = person.approvals.wait(held.id, { pollMs: 200 });
  let settled = false;
  void waited.then(() => (settled = true));
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(settled, false, "wait resolved while the approval was pending");
  const decided = await person.approvals.decide(held.id, { decision: "deny", reason: "not from a test" });
  assert.equal(decided.state, "denied");
  assert.equal(decided.decided_by, key.id);
  assert.equal(decided.reason, "not from a test");
  assert.equal(decided.remember, "once");
  assert.ok(decided.decided_at);
  const after = await waited;
  assert.deepEqual([after.state, after.decided_by], ["denied", key.id]);
  await assert.rejects(person.approvals.decide(held.id, { decision: "deny" }), ConflictError);

  const out = await sb.processes.output(curl.pid, { follow: true });
  const text = (await out.text()).replaceAll("\r\n", "\n");
  assert.equal(out.exit?.exit_code, 0, text);
  for (const want of ["HTTP/1.1 403", "X-Airlock-Egress-Approval: denied", "not from a test"]) assert.ok(text.includes(want), `curl printed ${text}`);
  assert.deepEqual((await person.approvals.list({ state: "denied" })).map((a) => a.id), [held.id]);
  assert.deepEqual(await person.approvals.list({ state: "pending" }), []);

  // The tenant's event stream carried the request and the decision.
  const seen: [string, schema.Approval["state"]][] = [];
  const stop = setTimeout(() => ac.abort(), 30_000);
  for await (const e of events) {
    const a = e.data as unknown as schema.Approval;
    if (a.id !== held.id) continue;
    seen.push([e.type, a.state]);
    if (e.type === "approval.decided") break;
  }
  clearTimeout(stop);
  ac.abort();
  assert.deepEqual(seen, [["approval.requested", "pending"], ["approval.decided", "denied"]]);
});
