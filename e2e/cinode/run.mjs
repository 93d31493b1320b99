// Drives Airlock's code-interpreter template through the E2B facade with
// the unmodified @e2b/code-interpreter SDK, as an agent codebase would
// after setting two variables. e2e/cinode_test.go runs it against a real
// `airlock serve` that has built the template:
//
//   node run.mjs URL API_KEY main            creates a sandbox, runs it all
//   node run.mjs URL API_KEY after ID        after a restart of the server:
//                                            the state is still there
//
// It prints one line per step, "SANDBOX <id>" for the Go side, and "ok"
// last; it exits 1 on the first failure.
import "../e2bnode/guard.mjs";
import assert from "node:assert/strict";

const [url, key, mode, id] = process.argv.slice(2);
if (!url || !key || !["main", "after"].includes(mode) || (mode === "after" && !id)) {
  console.error("usage: node run.mjs URL API_KEY main | after SANDBOX_ID");
  process.exit(2);
}
process.env.E2B_API_URL = `${url}/e2b`;
process.env.E2B_SANDBOX_URL = `${url}/e2b/envd`;
process.env.E2B_DOMAIN = "localhost";
process.env.E2B_API_KEY = key;
const { Sandbox } = await import("@e2b/code-interpreter");
const { TimeoutError, NotFoundError } = await import("@e2b/code-interpreter");

const began = Date.now();
function step(name) {
  console.log(`- ${name} (at ${((Date.now() - began) / 1000).toFixed(1)} s)`);
}

// A chart's PNG: its signature, and the width and height of its IHDR.
function pngSize(b64) {
  const b = Buffer.from(b64, "base64");
  assert.deepEqual([...b.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature");
  assert.equal(b.subarray(12, 16).toString("latin1"), "IHDR", "the first chunk is IHDR");
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

if (mode === "after") {
  step("Sandbox.connect after the server restarted");
  const sbx = await Sandbox.connect(id);
  step("the kernel kept its state: x is still 41");
  const x = await sbx.runCode("x", { timeoutMs: 30000 });
  assert.equal(x.text, "41");
  const ctxs = await sbx.listCodeContexts();
  assert.ok(ctxs.some((c) => c.language === "python"), JSON.stringify(ctxs));
  await sbx.kill();
  console.log("ok");
  process.exit(0);
}

step("the loopback guard is on");
await assert.rejects(fetch("https://api.e2b.app/health"), (err) => /guard: refused/.test(err.cause?.message));

step("Sandbox.create() with the SDK's default template (code-interpreter-v1)");
const sbx = await Sandbox.create({ metadata: { suite: "cinode" }, requestTimeoutMs: 180000 });
console.log(`SANDBOX ${sbx.sandboxId}`);

step("runCode keeps state from one call to the next");
const first = await sbx.runCode("x = 41\nx + 1");
assert.equal(first.text, "42");
assert.equal(typeof first.executionCount, "number");
const second = await sbx.runCode("x");
assert.equal(second.text, "41");
assert.equal(second.executionCount, first.executionCount + 1);

step("stdout and stderr stream through onStdout and onStderr as the code prints");
const outs = [];
const errs = [];
let firstAt = 0;
const streamed = await sbx.runCode(
  "import sys, time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('second')\nprint('oops', file=sys.stderr)",
  {
    onStdout: (m) => {
      outs.push(m.line);
      firstAt ||= Date.now();
    },
    onStderr: (m) => errs.push(m.line),
  },
);
const doneAt = Date.now();
assert.equal(outs.join(""), "first\nsecond\n");
assert.equal(errs.join(""), "oops\n");
assert.deepEqual(streamed.logs, { stdout: outs, stderr: errs });
// Streamed, not handed over at the end: the first line came while the
// code still slept.
assert.ok(doneAt - firstAt > 700, `first stdout ${doneAt - firstAt} ms before the end`);

step("an exception comes back with its name, value and traceback");
const errors = [];
const failed = await sbx.runCode("def f():\n    raise ValueError('bad value')\nf()", { onError: (e) => errors.push(e) });
assert.equal(failed.error?.name, "ValueError");
assert.equal(failed.error?.value, "bad value");
assert.match(failed.error?.traceback, /ValueError/);
assert.match(failed.error?.traceback, /raise ValueError\('bad value'\)/);
assert.equal(errors.length, 1);

step("a matplotlib chart comes back as a PNG");
const chart = await sbx.runCode(
  "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.title('airlock')\nplt.show()",
);
assert.equal(chart.error, undefined, JSON.stringify(chart.error));
const png = chart.results.find((r) => r.png);
assert.ok(png, `no PNG among ${JSON.stringify(chart.results.map((r) => r.formats()))}`);
assert.ok(png.formats().includes("png"));
const size = pngSize(png.png);
// 400x300 at most: the inline backend crops the figure's margins.
assert.ok(size.width > 200 && size.width <= 400 && size.height > 150 && size.height <= 300, JSON.stringify(size));

step("a DataFrame comes back as text, html and data; JSON as json");
const frame = await sbx.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', None]})");
const df = frame.results.find((r) => r.isMainResult);
assert.match(df.html, /<table/);
assert.match(df.text, /a\s+b/);
assert.deepEqual(df.data, { a: [1, 2], b: ["x", null] });
const js = await sbx.runCode("from IPython.display import JSON\nJSON({'k': [1, 2]})");
assert.deepEqual(js.results[0].json, { k: [1, 2] });

step("envs apply to one call only");
const withEnv = await sbx.runCode("import os\nos.environ.get('CI_VAR')", { envs: { CI_VAR: "v1" } });
assert.equal(withEnv.text, "'v1'");
const without = await sbx.runCode("print(os.environ.get('CI_VAR'))");
assert.equal(without.logs.stdout.join(""), "None\n");

step("contexts: create with a cwd, list, restart, remove");
const ctx = await sbx.createCodeContext({ cwd: "/tmp" });
console.log(`  created context ${ctx.id}`);
assert.equal(ctx.language, "python");
assert.equal(ctx.cwd, "/tmp");
const inCtx = await sbx.runCode("import os\ny = 7\nos.getcwd()", { context: ctx });
assert.equal(inCtx.text, "'/tmp'");
const isolated = await sbx.runCode("x", { context: ctx });
assert.equal(isolated.error?.name, "NameError", "a new context does not see the default one's x");
assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
console.log("  listed; restarting");
await sbx.restartCodeContext(ctx);
console.log("  restarted");
const restarted = await sbx.runCode("y", { context: ctx });
assert.equal(restarted.error?.name, "NameError", "a restarted context starts empty");
assert.equal((await sbx.runCode("x")).text, "41", "the default context is untouched");
console.log("  removing");
await sbx.removeCodeContext(ctx);
console.log("  removed");
assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
await assert.rejects(sbx.runCode("1", { context: ctx }), (err) => err instanceof NotFoundError && err.message.includes(ctx.id));

step("timeoutMs interrupts a loop that never ends, and the kernel goes on");
const t0 = Date.now();
await assert.rejects(sbx.runCode("import time\nwhile True:\n    time.sleep(0.05)", { timeoutMs: 1500 }), (err) => err instanceof TimeoutError);
assert.ok(Date.now() - t0 < 15000);
const after = await sbx.runCode("x", { timeoutMs: 20000 });
assert.equal(after.text, "41");

step("a language without a kernel is refused, saying so");
for (const language of ["javascript", "bash"]) {
  await assert.rejects(sbx.runCode("echo 1", { language }), (err) => {
    assert.ok(err instanceof NotFoundError, `got ${err}`);
    assert.match(err.message, new RegExp(`language "${language}" is not available in this sandbox`));
    return true;
  });
}
await assert.rejects(sbx.createCodeContext({ language: "javascript" }), /language "javascript" is not available/);

step("the sandbox runs on Airlock's code-interpreter template");
assert.equal((await sbx.getInfo()).templateId, "code-interpreter");

console.log("ok");
// The create's long request timeout would keep node waiting.
process.exit(0);
