// Drives Airlock's E2B-compatible facade with the unmodified e2b SDK, as an
// agent codebase would after setting two variables. e2e/e2bnode_test.go
// runs it against a real `airlock serve`:
//
//   node run.mjs URL API_KEY OTHER_TENANT_KEY NATIVE_SANDBOX_ID
//
// It prints one line per step, "SANDBOX <id>" for the Go side to check,
// and "ok" last; it exits 1 on the first failure.
import "./guard.mjs";
import assert from "node:assert/strict";

const [url, key, otherKey, nativeId] = process.argv.slice(2);
if (!url || !key || !otherKey || !nativeId) {
  console.error("usage: node run.mjs URL API_KEY OTHER_TENANT_KEY NATIVE_SANDBOX_ID");
  process.exit(2);
}
process.env.E2B_API_URL = `${url}/e2b`;
process.env.E2B_SANDBOX_URL = `${url}/e2b/envd`;
process.env.E2B_DOMAIN = "localhost";
process.env.E2B_API_KEY = key;
const { Sandbox, CommandExitError, FileNotFoundError, SandboxNotFoundError, TimeoutError } = await import("e2b");

const enc = new TextEncoder();
const dec = new TextDecoder();
const run = `r${Date.now().toString(36)}`;

function step(name) {
  console.log(`- ${name}`);
}

// until waits for cond() to hold, polling, or fails after ms.
async function until(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

step("the loopback guard is on");
await assert.rejects(fetch("https://api.e2b.app/health"), (err) => /guard: refused/.test(err.cause?.message));

step("Sandbox.create with metadata");
const sbx = await Sandbox.create({ metadata: { suite: "e2bnode", run } });
assert.ok(sbx.sandboxId);
console.log(`SANDBOX ${sbx.sandboxId}`);

try {
  step("commands.run echo hi");
  const hi = await sbx.commands.run("echo hi");
  assert.equal(hi.stdout, "hi\n");
  assert.equal(hi.stderr, "");
  assert.equal(hi.exitCode, 0);

  step("commands run as the user, in its home, through a login bash");
  const who = await sbx.commands.run('echo "$(id -u) $PWD $0"');
  assert.equal(who.stdout, "1000 /home/user /bin/bash\n");
  const env = await sbx.commands.run("echo $FOO; pwd", { envs: { FOO: "bar" }, cwd: "/tmp" });
  assert.equal(env.stdout, "bar\n/tmp\n");

  step("a failing command raises CommandExitError with its code");
  await assert.rejects(sbx.commands.run("echo oops >&2; exit 3"), (err) => {
    assert.ok(err instanceof CommandExitError, `got ${err}`);
    assert.equal(err.exitCode, 3);
    assert.equal(err.stderr, "oops\n");
    return true;
  });

  step("onStdout and onStderr stream as the command prints");
  const chunks = [];
  const errs = [];
  const streamed = await sbx.commands.run("for i in 1 2 3; do echo line$i; sleep 0.3; done; echo e >&2", {
    onStdout: (d) => chunks.push(d),
    onStderr: (d) => errs.push(d),
  });
  assert.equal(chunks.join(""), "line1\nline2\nline3\n");
  assert.ok(chunks.length >= 3, `expected separate chunks, got ${JSON.stringify(chunks)}`);
  assert.equal(errs.join(""), "e\n");
  assert.equal(streamed.stdout, "line1\nline2\nline3\n");

  step("background, commands.list, commands.connect(pid), kill");
  const bg = await sbx.commands.run("sleep 1.5; echo started; sleep 300", { background: true, timeoutMs: 0 });
  assert.ok(bg.pid > 0);
  const procs = await sbx.commands.list();
  assert.ok(procs.some((p) => p.pid === bg.pid), `pid ${bg.pid} not in ${JSON.stringify(procs)}`);
  let seen = "";
  const again = await sbx.commands.connect(bg.pid, { onStdout: (d) => (seen += d), timeoutMs: 0 });
  assert.equal(again.pid, bg.pid);
  await until("the background output", () => seen.includes("started"));
  assert.equal(await again.kill(), true);
  await assert.rejects(again.wait(), (err) => err instanceof CommandExitError && err.exitCode === -1);
  await assert.rejects(bg.wait(), CommandExitError);
  assert.equal(bg.stdout, "started\n");
  assert.equal(await sbx.commands.kill(bg.pid), false, "killing an exited process");
  assert.equal(await sbx.commands.kill(999999), false, "killing an unknown pid");

  step("sendStdin and closeStdin");
  const reader = await sbx.commands.run("read line; echo got:$line", { background: true, stdin: true });
  await reader.sendStdin("hello\n");
  assert.equal((await reader.wait()).stdout, "got:hello\n");
  const cat = await sbx.commands.run("cat", { background: true, stdin: true });
  await sbx.commands.sendStdin(cat.pid, "abc");
  await cat.closeStdin();
  assert.equal((await cat.wait()).stdout, "abc");
  const noStdin = await sbx.commands.run("cat; echo eof");
  assert.equal(noStdin.stdout, "eof\n", "without stdin: true a command reads EOF");

  step("files.write and files.read, text and binary");
  const info = await sbx.files.write("notes/a.txt", "hello");
  assert.equal(info.path, "/home/user/notes/a.txt");
  assert.equal(info.name, "a.txt");
  assert.equal(await sbx.files.read("notes/a.txt"), "hello");
  const bin = new Uint8Array(256).map((_, i) => i);
  await sbx.files.write("/tmp/bin.dat", bin);
  assert.deepEqual(await sbx.files.read("/tmp/bin.dat", { format: "bytes" }), bin);
  await sbx.files.write("empty.txt", "");
  assert.equal(await sbx.files.read("empty.txt"), "");
  await sbx.files.write([
    { path: "multi/one.txt", data: "1" },
    { path: "multi/two.txt", data: "2" },
  ]);
  assert.equal((await sbx.commands.run("cat multi/one.txt multi/two.txt")).stdout, "12");
  await assert.rejects(sbx.files.read("missing.txt"), FileNotFoundError);

  step("files.list, makeDir, exists, getInfo, rename, remove");
  const list = await sbx.files.list("notes");
  assert.deepEqual(
    list.map((e) => [e.name, e.type, e.path, e.size]),
    [["a.txt", "file", "/home/user/notes/a.txt", 5]],
  );
  assert.equal(await sbx.files.makeDir("dir1/sub"), true);
  assert.equal(await sbx.files.makeDir("dir1/sub"), false, "makeDir of an existing dir");
  assert.equal(await sbx.files.exists("dir1/sub"), true);
  assert.equal(await sbx.files.exists("dir1/nope"), false);
  const deep = await sbx.files.list("dir1", { depth: 2 });
  assert.deepEqual(deep.map((e) => e.path), ["/home/user/dir1/sub"]);
  const moved = await sbx.files.rename("notes/a.txt", "dir1/b.txt");
  assert.equal(moved.path, "/home/user/dir1/b.txt");
  assert.equal(await sbx.files.exists("notes/a.txt"), false);
  const st = await sbx.files.getInfo("dir1/b.txt");
  assert.equal(st.type, "file");
  assert.equal(st.size, 5);
  assert.equal(st.permissions, "-rw-r--r--");
  assert.ok(st.modifiedTime instanceof Date && !isNaN(st.modifiedTime));
  assert.equal((await sbx.files.getInfo("dir1")).type, "dir");
  await sbx.files.remove("dir1");
  assert.equal(await sbx.files.exists("dir1"), false);
  await assert.rejects(sbx.files.getInfo("dir1"), FileNotFoundError);

  step("files.watchDir sees creates, writes, chmods and removes (polled)");
  await sbx.files.write("watched/before.txt", "1");
  const evs = [];
  const seenEvent = (type, name) => evs.some((e) => e.type === type && e.name === name);
  const watch = await sbx.files.watchDir("watched", (e) => evs.push(e), { timeoutMs: 0 });
  await sbx.files.write("watched/new.txt", "new");
  await until("the create event", () => seenEvent("create", "new.txt"));
  await sbx.commands.run("echo more >> watched/before.txt");
  await until("the write event", () => seenEvent("write", "before.txt"));
  await sbx.commands.run("chmod 600 watched/before.txt");
  await until("the chmod event", () => seenEvent("chmod", "before.txt"));
  await sbx.files.remove("watched/new.txt");
  await until("the remove event", () => seenEvent("remove", "new.txt"));
  await watch.stop();
  const stoppedAt = evs.length;
  const deepEvs = [];
  const deepWatch = await sbx.files.watchDir("watched", (e) => deepEvs.push(e), { recursive: true });
  await sbx.files.write("watched/sub/deep.txt", "d");
  await until("the recursive create", () => deepEvs.some((e) => e.type === "create" && e.name === "sub/deep.txt"));
  assert.equal(evs.length, stoppedAt, `a stopped watch still got events: ${JSON.stringify(evs.slice(stoppedAt))}`);
  await deepWatch.stop();
  await assert.rejects(sbx.files.watchDir("no-such-dir", () => {}), FileNotFoundError);

  step("unsupported calls fail with an error, never hang");
  await assert.rejects(sbx.commands.run("id", { user: "root" }), /user/);

  step("pty.create with input and resize");
  let screen = "";
  const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => (screen += dec.decode(d)) });
  assert.ok(term.pid > 0);
  await sbx.pty.sendInput(term.pid, enc.encode("echo pty-$((6*7))\n"));
  await until("the terminal's output", () => screen.includes("pty-42"));
  assert.equal((await sbx.commands.run("tty || true")).stdout, "not a tty\n", "commands have no terminal");
  await sbx.pty.resize(term.pid, { cols: 100, rows: 30 });
  await sbx.pty.sendInput(term.pid, enc.encode("stty size\n"));
  await until("the new size", () => screen.includes("30 100"));
  await sbx.pty.sendInput(term.pid, enc.encode("exit 0\n"));
  assert.equal((await term.wait()).exitCode, 0);
  const term2 = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} });
  assert.equal(await sbx.pty.kill(term2.pid), true);
  await assert.rejects(term2.wait(), CommandExitError);

  step("Sandbox.list by metadata");
  const page = Sandbox.list({ query: { metadata: { run } } });
  const items = await page.nextItems();
  assert.deepEqual(items.map((s) => s.sandboxId), [sbx.sandboxId]);
  assert.equal(items[0].state, "running");
  assert.equal(items[0].metadata.suite, "e2bnode");
  assert.deepEqual(await Sandbox.list({ query: { metadata: { run: "nope" } } }).nextItems(), []);

  step("egress: allowOut and denyOut become Airlock's allow-list; allowInternetAccess every public address");
  const netSbx = await Sandbox.create({ metadata: { run }, network: { allowOut: ["pypi.org", "*.pythonhosted.org"], denyOut: ["10.0.0.0/8"] } });
  console.log(`NETSANDBOX ${netSbx.sandboxId}`);
  const netInfo = await netSbx.getInfo();
  assert.equal(netInfo.allowInternetAccess, true);
  assert.deepEqual(netInfo.network.allowOut, ["pypi.org", "*.pythonhosted.org"]);
  assert.deepEqual(netInfo.network.denyOut, ["10.0.0.0/8"]);
  assert.equal((await sbx.getInfo()).allowInternetAccess, false, "no network at all by default");
  // E2B's open internet, as far as an Airlock policy says it.
  const open = await Sandbox.create({ allowInternetAccess: true });
  assert.deepEqual((await open.getInfo()).network.allowOut, ["0.0.0.0/0", "::/0"]);
  await open.kill();
  // A wide rule is taken as Airlock's: every public address, by IP or by a
  // name whose addresses are all public.
  const wide = await Sandbox.create({ network: { allowOut: ["0.0.0.0/0", "::/0"] } });
  assert.deepEqual((await wide.getInfo()).network.allowOut, ["0.0.0.0/0", "::/0"]);
  await wide.kill();
  const closed = await Sandbox.create({ allowInternetAccess: false });
  assert.equal((await closed.getInfo()).allowInternetAccess, false);
  await closed.kill();

  step("Sandbox.list pages with limit and nextToken");
  const pager = Sandbox.list({ limit: 1, query: { metadata: { run } } });
  const ids = [];
  while (pager.hasNext) {
    const got = await pager.nextItems();
    assert.ok(got.length <= 1);
    ids.push(...got.map((s) => s.sandboxId));
  }
  assert.deepEqual(ids.sort(), [sbx.sandboxId, netSbx.sandboxId].sort());
  await netSbx.kill();

  step("setTimeout and getInfo");
  await sbx.setTimeout(600_000);
  const got = await sbx.getInfo();
  assert.equal(got.sandboxId, sbx.sandboxId);
  assert.equal(got.templateId, "base");
  assert.equal(got.metadata.run, run);
  const left = got.endAt.getTime() - Date.now();
  assert.ok(left > 550_000 && left <= 601_000, `endAt is ${left} ms away`);
  assert.equal(await sbx.isRunning(), true);

  step("Sandbox.connect(id) from a second client");
  const second = await Sandbox.connect(sbx.sandboxId);
  assert.equal(await second.files.read("/tmp/bin.dat", { format: "bytes" }).then((b) => b.length), 256);
  assert.equal((await second.commands.run("echo second")).stdout, "second\n");

  step("a sandbox made with Airlock's own API works through the facade");
  const native = await Sandbox.connect(nativeId);
  assert.equal((await native.commands.run("cat /home/user/native.txt")).stdout, "native");
  assert.equal((await Sandbox.getInfo(nativeId)).metadata.made, "natively");

  step("another tenant's key cannot see or touch the sandbox");
  const other = { apiKey: otherKey };
  await assert.rejects(Sandbox.connect(sbx.sandboxId, other), SandboxNotFoundError);
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId, other), SandboxNotFoundError);
  await assert.rejects(Sandbox.setTimeout(sbx.sandboxId, 1000, other), SandboxNotFoundError);
  assert.equal(await Sandbox.kill(sbx.sandboxId, other), false);
  assert.deepEqual(await Sandbox.list({ ...other, query: { metadata: { run } } }).nextItems(), []);
  const stranger = await Sandbox.create({ ...other, metadata: { run } });
  // The other tenant's own access token is no key to this sandbox.
  const intruder = await Sandbox.connect(stranger.sandboxId, other);
  intruder.sandboxId = sbx.sandboxId;
  const forged = new Sandbox({ ...other, sandboxId: sbx.sandboxId, envdAccessToken: intruder.envdAccessToken, envdVersion: "0.5.7" });
  await assert.rejects(forged.commands.run("echo in"));
  await assert.rejects(forged.files.read("/tmp/bin.dat"));
  await stranger.kill();
  assert.equal(await sbx.isRunning(), true);

  step("a sandbox with less than a minute left runs commands with the default 60 s timeout");
  const short = await Sandbox.create({ timeoutMs: 20_000, metadata: { run } });
  assert.equal((await short.commands.run("echo short")).stdout, "short\n");
  await short.kill();

  step("a command past its timeoutMs is killed and raises TimeoutError, as E2B's envd ends it");
  await assert.rejects(sbx.commands.run("sleep 30; echo late > /tmp/late", { timeoutMs: 1000 }), TimeoutError);
  assert.equal((await sbx.commands.run("cat /tmp/late 2>/dev/null || echo killed")).stdout, "killed\n");

  step("an unknown template gets E2B's error");
  await assert.rejects(Sandbox.create("no-such-template"), /template 'no-such-template' not found/);
} catch (err) {
  await sbx.kill().catch(() => {});
  throw err;
}

step("kill");
await sbx.kill();
await assert.rejects(Sandbox.getInfo(sbx.sandboxId), SandboxNotFoundError);
assert.equal(await Sandbox.kill(sbx.sandboxId), false);
assert.equal(await sbx.isRunning(), false);
// E2B's answer for an ended sandbox (502 "The sandbox was not found"), not
// an authentication error: its token went with it.
await assert.rejects(sbx.commands.run("echo gone"), SandboxNotFoundError);
await assert.rejects(sbx.files.read("/tmp/bin.dat"), (err) => err instanceof TimeoutError && /sandbox was not found/.test(err.message));
console.log("ok");
