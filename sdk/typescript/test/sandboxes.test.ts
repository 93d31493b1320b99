// Sandboxes' lifecycle through the SDK, and the API's errors as typed
// Error subclasses.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  Airlock,
  AirlockError,
  ConflictError,
  ConnectionError,
  ForbiddenError,
  InvalidError,
  MethodNotAllowedError,
  NotFoundError,
  PausedError,
  UnauthorizedError,
} from "@airlockhq/sdk";
import { airlock, sandbox } from "./env.js";

test("create, get, list, timeout, delete", async () => {
  const run = `r${Date.now().toString(36)}`;
  const sb = await sandbox({ metadata: { run }, memory_mb: 256 });
  assert.equal(sb.info?.state, "running");
  assert.equal(sb.info?.limits.memory_mb, 256);

  const got = await airlock.sandboxes.get(sb.id);
  assert.equal(got.info?.id, sb.id);
  assert.equal(got.info?.metadata.run, run);

  const page = await airlock.sandboxes.list({ metadata: { run }, state: "running" });
  assert.deepEqual(page.sandboxes.map((s) => s.id), [sb.id]);
  assert.equal(page.next, "");
  const all = [];
  for await (const s of airlock.sandboxes.all({ metadata: { suite: "sdkts" }, limit: 1 })) all.push(s.id);
  assert.ok(all.includes(sb.id), `all() pages through every sandbox: ${all}`);

  const before = Date.parse(sb.info!.expires_at);
  const after = await sb.setTimeout(3600);
  assert.ok(Date.parse(after.expires_at) > before + 60_000, `expires_at ${after.expires_at} moved from ${sb.info!.expires_at}`);
  assert.equal(sb.info, after);

  await sb.delete();
  // A destroyed sandbox is kept, stopped, for its audit log's sake.
  assert.equal((await sb.refresh()).state, "stopped");
});

test("pause and resume; a paused sandbox's exec is a PausedError", async () => {
  const sb = await sandbox();
  const paused = await sb.pause();
  assert.equal(paused.state, "paused");
  const err = await sb.exec("true").then(
    () => assert.fail("exec in a paused sandbox succeeded"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof PausedError, `got ${err}`);
  assert.ok(err instanceof ConflictError, "a PausedError is a ConflictError too");
  assert.equal(err.code, "paused");
  assert.equal(err.status, 409);
  const resumed = await sb.resume();
  assert.equal(resumed.state, "running");
  assert.equal((await sb.exec("echo back")).stdout, "back\n");
});

test("typed errors", async () => {
  // not_found, for an id that is nobody's.
  const nf = await airlock.sandboxes.get("sb-does-not-exist").catch((e: unknown) => e);
  assert.ok(nf instanceof NotFoundError && nf instanceof AirlockError && nf instanceof Error, `got ${nf}`);
  assert.equal(nf.status, 404);
  assert.equal(nf.code, "not_found");
  assert.match(nf.message, /sb-does-not-exist/);

  // invalid_argument, naming the field.
  const inv = await airlock.sandboxes.create({ cpus: 5000 }).catch((e: unknown) => e);
  assert.ok(inv instanceof InvalidError, `got ${inv}`);
  assert.match(inv.message, /cpus/);

  // unauthenticated.
  const bad = new Airlock({ url: airlock.url, apiKey: "alk_not_a_key" });
  await assert.rejects(bad.sandboxes.list(), UnauthorizedError);

  // forbidden: a sandbox token outside its sandbox's routes.
  const sb = await sandbox();
  const token = await sb.createToken(600);
  assert.match(token.token, /^alt_/);
  const scoped = new Airlock({ url: airlock.url, apiKey: token.token });
  assert.equal((await scoped.sandbox(sb.id).exec(["echo", "token"])).stdout, "token\n");
  await assert.rejects(scoped.secrets.list(), ForbiddenError);
  await assert.rejects(scoped.sandbox("sb-other").refresh(), NotFoundError);

  // method_not_allowed, through the raw fetch the client also offers.
  const res = await airlock.fetch("/v1/sandboxes", { method: "PATCH" });
  assert.equal(res.status, 405);
  await res.body?.cancel();
  assert.ok(new MethodNotAllowedError("x") instanceof AirlockError);

  // No server there: a ConnectionError, not an AirlockError with a status.
  const gone = new Airlock({ url: "http://127.0.0.1:1", apiKey: "alk_x" });
  const ce = await gone.health().catch((e: unknown) => e);
  assert.ok(ce instanceof ConnectionError, `got ${ce}`);
  assert.equal(ce.status, 0);
});

test("the client reads AIRLOCK_URL and AIRLOCK_API_KEY, and a URL's trailing slash is dropped", async () => {
  assert.equal(airlock.url, process.env.AIRLOCK_URL!.replace(/\/$/, ""));
  const c = new Airlock({ url: airlock.url + "/", apiKey: process.env.AIRLOCK_API_KEY });
  assert.equal(c.url, airlock.url);
  assert.equal((await c.health()).status, "ok");
  assert.equal((await c.ready()).status, "ready");
  const doc = await c.openAPI();
  assert.equal(doc.openapi, "3.1.0");
});

test("snapshots, forks and volumes", async () => {
  const sb = await sandbox();
  await sb.files.write("kept.txt", "from the parent");
  const snap = await sb.snapshot({ name: `snap-${Date.now().toString(36)}` });
  assert.equal(snap.sandbox, sb.id);
  assert.ok((await airlock.snapshots.list()).some((s) => s.name === snap.name));
  assert.equal((await airlock.snapshots.get(snap.name)).name, snap.name);
  const fromSnap = await sandbox({ snapshot: snap.name });
  assert.equal(await fromSnap.files.readText("kept.txt"), "from the parent");
  await fromSnap.delete();
  await airlock.snapshots.delete(snap.name);
  await assert.rejects(airlock.snapshots.get(snap.name), NotFoundError);

  const [fork] = await sb.fork({ count: 1, metadata: { suite: "sdkts" } });
  try {
    assert.equal(fork!.info?.fork_of, sb.id);
    assert.equal(await fork!.files.readText("kept.txt"), "from the parent");
  } finally {
    await fork!.delete();
  }

  const vol = await airlock.volumes.create({ name: `vol-${Date.now().toString(36)}`, size_mb: 64 });
  assert.ok((await airlock.volumes.list()).some((v) => v.name === vol.name));
  const user = await sandbox({ volumes: [{ name: vol.name, path: "/mnt/data" }] });
  await user.files.write("/mnt/data/v.txt", "on the volume");
  await assert.rejects(airlock.volumes.delete(vol.name), ConflictError);
  await user.delete();
  await airlock.volumes.delete(vol.name);
  await assert.rejects(airlock.volumes.get(vol.name), NotFoundError);
});
