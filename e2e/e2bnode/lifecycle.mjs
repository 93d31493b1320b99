// Pause, resume, snapshots and forks through Airlock's E2B facade with the
// unmodified e2b SDK. e2e/e2b_lifecycle_test.go runs it against a real
// `airlock serve`:
//
//   node lifecycle.mjs URL API_KEY
//
// It prints one line per step, "SANDBOX <id>" for the Go side to check,
// and "ok" last; it exits 1 on the first failure.
import "./guard.mjs";
import assert from "node:assert/strict";

const [url, key] = process.argv.slice(2);
if (!url || !key) {
  console.error("usage: node lifecycle.mjs URL API_KEY");
  process.exit(2);
}
process.env.E2B_API_URL = `${url}/e2b`;
process.env.E2B_SANDBOX_URL = `${url}/e2b/envd`;
process.env.E2B_DOMAIN = "localhost";
process.env.E2B_API_KEY = key;
const { Sandbox, SandboxNotFoundError } = await import("e2b");

const run = `r${Date.now().toString(36)}`;

function step(name) {
  console.log(`- ${name}`);
}

async function ids(paginator) {
  const out = [];
  while (paginator.hasNext) {
    for (const item of await paginator.nextItems()) out.push(item.sandboxId ?? item.snapshotId);
  }
  return out;
}

step("lifecycle.onTimeout 'pause' is refused: Airlock destroys a sandbox at its timeout");
await assert.rejects(Sandbox.create({ lifecycle: { onTimeout: "pause" } }), /autoPause .*not supported/);

const sbx = await Sandbox.create({ metadata: { suite: "e2blifecycle", run }, timeoutMs: 300_000 });
console.log(`SANDBOX ${sbx.sandboxId}`);
const made = [];
try {
  step("a file in /tmp and a background process before the pause");
  await sbx.files.write("/tmp/kept.txt", "before the pause");
  await sbx.commands.run("echo $$ > /tmp/pid; exec sleep 600", { background: true, timeoutMs: 0 });
  // Until the background shell has written /tmp/pid, there is no start
  // time to read (and /proc//stat would be /proc/stat): the run fails.
  const startOf = async (s) =>
    (await s.commands.run(`p=$(cat /tmp/pid 2>/dev/null); [ -n "$p" ] && cut -d' ' -f22 "/proc/$p/stat"`)).stdout.trim();
  let started = "";
  for (let i = 0; i < 50 && !started; i++) {
    started = await startOf(sbx).catch(() => "");
    if (!started) await new Promise((r) => setTimeout(r, 100));
  }
  assert.match(started, /^\d+$/);

  step("pause, and pause again (false: already paused)");
  assert.equal(await sbx.pause(), true);
  assert.equal(await sbx.pause(), false);

  step("getInfo and list show it paused; isRunning is false");
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, "paused");
  const mine = { metadata: { run } };
  assert.deepEqual(await ids(Sandbox.list({ query: { ...mine, state: ["paused"] } })), [sbx.sandboxId]);
  assert.deepEqual(await ids(Sandbox.list({ query: { ...mine, state: ["running"] } })), []);
  assert.deepEqual(await ids(Sandbox.list({ query: mine })), [sbx.sandboxId]);
  assert.equal(await sbx.isRunning(), false);

  step("a command on the paused sandbox is refused");
  await assert.rejects(sbx.commands.run("true"), /paused/);

  step("Sandbox.connect resumes it: its files and processes are as they were");
  const back = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 300_000 });
  const info = await Sandbox.getInfo(sbx.sandboxId);
  assert.equal(info.state, "running");
  assert.ok(info.endAt.getTime() - Date.now() > 250_000, `endAt ${info.endAt.toISOString()}`);
  assert.equal(await back.files.read("/tmp/kept.txt"), "before the pause");
  assert.equal(await startOf(back), started, "the background process was not the same one after the resume");
  assert.equal((await back.commands.run("echo after")).stdout, "after\n");
  assert.deepEqual(await ids(Sandbox.list({ query: { ...mine, state: ["running"] } })), [sbx.sandboxId]);

  step("betaPause, then the instance's connect()");
  assert.equal(await sbx.betaPause(), true);
  await sbx.connect();
  assert.equal(await sbx.isRunning(), true);
  assert.equal((await sbx.commands.run("cat /tmp/kept.txt")).stdout, "before the pause");

  step("createSnapshot and listSnapshots");
  await sbx.files.write("/home/user/state.json", '{"step":1}');
  const name = `snap-${run}`;
  const snap = await sbx.createSnapshot({ name });
  assert.deepEqual(snap, { snapshotId: name, names: [name] });
  assert.deepEqual(await ids(sbx.listSnapshots()), [name]);
  assert.ok((await ids(Sandbox.listSnapshots())).includes(name));
  await assert.rejects(sbx.createSnapshot({ name }), /exists/);

  step("Sandbox.create(snapshotId) starts from the snapshot's files");
  const copy = await Sandbox.create(snap.snapshotId, { timeoutMs: 120_000 });
  made.push(copy);
  assert.equal(await copy.files.read("/home/user/state.json"), '{"step":1}');
  assert.equal((await copy.getInfo()).templateId, name);
  assert.equal((await copy.commands.run("echo copy")).stdout, "copy\n");

  step("fork: two sandboxes with the files");
  const forks = await sbx.fork({ count: 2, timeoutMs: 120_000 });
  assert.equal(forks.length, 2);
  for (const f of forks) {
    assert.ok(f instanceof Sandbox, `a fork failed: ${f}`);
    made.push(f);
    assert.notEqual(f.sandboxId, sbx.sandboxId);
    assert.equal(await f.files.read("/home/user/state.json"), '{"step":1}');
  }

  step("deleteSnapshot: true, then false; a template is not a snapshot");
  assert.equal(await Sandbox.deleteSnapshot(name), true);
  assert.equal(await Sandbox.deleteSnapshot(name), false);
  await assert.rejects(Sandbox.deleteSnapshot("base"), /snapshots only/);
  assert.equal(await copy.files.read("/home/user/state.json"), '{"step":1}');

  step("a paused sandbox can be killed");
  for (const s of made) assert.equal(await s.kill(), true);
  assert.equal(await sbx.pause(), true);
} catch (err) {
  for (const s of [sbx, ...made]) await s.kill().catch(() => {});
  throw err;
}
assert.equal(await sbx.kill(), true);
await assert.rejects(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError);
console.log("ok");
