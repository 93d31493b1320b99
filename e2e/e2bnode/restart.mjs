// The E2B SDK's commands.connect(pid) across a restart of the server:
// e2e/e2bnode_test.go (TestE2BNodeConnectAfterRestart) runs
//
//   node restart.mjs URL API_KEY start
//       creates a sandbox and a background command, prints "SANDBOX <id>"
//       and "PID <pid>", and leaves both running;
//   node restart.mjs URL API_KEY connect SANDBOX PID
//       after the server restarted: connects to the sandbox and the
//       command, lets it go on (it waits for /tmp/go), sees it end with 3
//       after printing n1..n60, and kills the sandbox.
//
// It prints "ok" last; it exits 1 on the first failure.
import "./guard.mjs";
import assert from "node:assert/strict";

const [url, key, phase, sandboxId, pidArg] = process.argv.slice(2);
if (!url || !key || !["start", "connect"].includes(phase) || (phase === "connect" && (!sandboxId || !pidArg))) {
  console.error("usage: node restart.mjs URL API_KEY start | connect SANDBOX PID");
  process.exit(2);
}
process.env.E2B_API_URL = `${url}/e2b`;
process.env.E2B_SANDBOX_URL = `${url}/e2b/envd`;
process.env.E2B_DOMAIN = "localhost";
process.env.E2B_API_KEY = key;
const { Sandbox, CommandExitError } = await import("e2b");

if (phase === "start") {
  const sbx = await Sandbox.create();
  // It waits for /tmp/go (written after the connect), so that a slow
  // restart cannot outlast it.
  const h = await sbx.commands.run("while [ ! -e /tmp/go ]; do sleep 0.1; done; for i in $(seq 1 60); do echo n$i; done; exit 3", { background: true });
  await h.disconnect();
  console.log(`SANDBOX ${sbx.sandboxId}`);
  console.log(`PID ${h.pid}`);
  console.log("ok");
  process.exit(0);
}

const pid = Number(pidArg);
const sbx = await Sandbox.connect(sandboxId);
const procs = await sbx.commands.list();
assert.ok(procs.some((p) => p.pid === pid), `pid ${pid} not listed after the restart: ${JSON.stringify(procs)}`);
let seen = "";
const h = await sbx.commands.connect(pid, { onStdout: (d) => (seen += d), timeoutMs: 0 });
assert.equal(h.pid, pid);
await sbx.files.write("/tmp/go", "");
await assert.rejects(h.wait(), (err) => err instanceof CommandExitError && err.exitCode === 3);
assert.match(seen, /n60\n$/, `the output after connect: ${JSON.stringify(seen)}`);
await sbx.kill();
console.log("ok");
