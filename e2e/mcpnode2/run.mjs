// Drives Airlock's MCP bridge with the official TypeScript SDK's v2 client
// (@modelcontextprotocol/client), over streamable HTTP and over stdio
// (spawning `airlock mcp`), at every protocol revision it can ask for:
// 2026-07-28 (stateless: server/discover, per-request _meta, no session),
// and the initialize handshake at 2025-11-25, 2025-06-18 and 2025-03-26.
// e2e/mcpnode2_test.go runs it against a real `airlock serve`:
//
//   node run.mjs URL API_KEY AIRLOCK_BINARY [DATA_DIR [ASK_SANDBOX]]
//
// With DATA_DIR it also runs `airlock mcp --data-dir DATA_DIR` with no
// server to reach, so that it starts an embedded daemon: v2's 2026-07-28
// probe over stdio runs on a sibling process that it kills afterwards, so
// each connect starts `airlock mcp`, and its daemon, twice.
//
// With ASK_SANDBOX, a sandbox whose network policy asks, it also curls
// denied.test there through a client with an elicitation handler, at every
// revision that has elicitation (2025-06-18 on): the held connection's approval must reach the handler (at
// 2026-07-28 through an input_required result that the client's
// multi-round-trip driver fulfils and retries; before it as
// elicitation/create), and its answer must let curl through.
//
// It prints one line per step and exits 1 on the first failure.
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [url, key, bin, dataDir, askSandbox] = process.argv.slice(2);
if (!url || !key || !bin) {
  console.error("usage: node run.mjs URL API_KEY AIRLOCK_BINARY [DATA_DIR [ASK_SANDBOX]]");
  process.exit(2);
}

const transports = {
  http: () =>
    new StreamableHTTPClientTransport(new URL("/mcp", url), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  stdio: () =>
    new StdioClientTransport({
      command: bin,
      args: ["mcp"],
      env: { ...process.env, AIRLOCK_URL: url, AIRLOCK_API_KEY: key },
      stderr: "inherit",
    }),
  // Port 1 on loopback: nothing listens there.
  embedded: () =>
    new StdioClientTransport({
      command: bin,
      args: ["mcp", "--data-dir", dataDir],
      env: { ...process.env, AIRLOCK_URL: "http://127.0.0.1:1", AIRLOCK_API_KEY: "" },
      stderr: "inherit",
    }),
};

// What a client asks for, and the revision it must end up on. v2 speaks
// 2026-07-28 only when told to (versionNegotiation); by default it runs
// the 2025 handshake at its newest legacy revision.
const revisions = [
  { name: "auto", want: "2026-07-28", opts: { versionNegotiation: { mode: "auto" } } },
  { name: "pin", want: "2026-07-28", opts: { versionNegotiation: { mode: { pin: "2026-07-28" } } } },
  { name: "default", want: "2025-11-25", opts: {} },
  { name: "2025-06-18", want: "2025-06-18", opts: { supportedProtocolVersions: ["2025-06-18"] } },
  { name: "2025-03-26", want: "2025-03-26", opts: { supportedProtocolVersions: ["2025-03-26"] } },
];

// call runs a tool that must succeed; the SDK checks structuredContent
// against the tool's output schema.
async function call(c, name, args, options) {
  const res = await c.callTool({ name, arguments: args }, options);
  assert.ok(!res.isError, `${name}: tool error: ${JSON.stringify(res.content)}`);
  assert.ok(res.structuredContent, `${name}: no structuredContent`);
  return res.structuredContent;
}

// toolError runs a tool that must fail as a tool (isError), not as the
// protocol, and returns its message.
async function toolError(c, name, args) {
  const res = await c.callTool({ name, arguments: args });
  assert.equal(res.isError, true, `${name}: want isError, got ${JSON.stringify(res)}`);
  return res.content.map((x) => x.text ?? "").join("");
}

// until polls f until it returns true, for at most ms.
async function until(what, ms, f) {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
    if (await f()) return;
  }
  assert.fail(`${what} within ${ms} ms`);
}

async function flow(kind, rev) {
  const tag = `${kind} ${rev.name}`;
  const c = new Client({ name: "airlock-mcpnode2", version: "1.0.0" }, rev.opts);
  const start = Date.now();
  await c.connect(transports[kind]());
  console.log(`${tag}: connected in ${Date.now() - start} ms`);
  try {
    assert.equal(c.getNegotiatedProtocolVersion(), rev.want, `${tag}: negotiated revision`);
    assert.equal(c.getProtocolEra(), rev.want >= "2026-07-28" ? "modern" : "legacy");
    assert.equal(c.getServerVersion()?.name, "airlock");
    const { tools } = await c.listTools();
    const names = tools.map((t) => t.name).sort();
    for (const want of ["sandbox_create", "run_command", "shell", "write_file", "read_file", "sandbox_destroy"]) {
      assert.ok(names.includes(want), `tools/list lacks ${want}: ${names}`);
    }
    for (const t of tools) {
      assert.ok(t.inputSchema?.properties, `${t.name}: no input schema`);
      assert.ok(t.outputSchema?.properties, `${t.name}: no output schema`);
    }
    console.log(`${tag}: negotiated ${rev.want}; ${tools.length} tools with schemas`);

    const { sandbox_id: id } = await call(c, "sandbox_create", { timeout_s: 120 });
    assert.match(id, /^sb-/);
    const run = await call(c, "run_command", { sandbox_id: id, command: "echo hi; echo oops >&2; exit 4" });
    assert.deepEqual([run.exit_code, run.stdout, run.stderr], [4, "hi\n", "oops\n"]);
    console.log(`${tag}: run_command in ${id}`);

    // Output comes as progress notifications on the call's own stream,
    // in both eras (2026-07-28 has no other server-to-client channel).
    const progress = [];
    await call(c, "run_command", { sandbox_id: id, command: "for i in 1 2 3; do echo tick $i; sleep 0.4; done" }, {
      onprogress: (p) => progress.push(p.message),
    });
    assert.ok(progress.length >= 2 && progress.join("\n").includes("tick"), `progress: ${JSON.stringify(progress)}`);
    console.log(`${tag}: ${progress.length} progress notifications`);

    const s1 = await call(c, "shell", { sandbox_id: id, command: "cd /tmp && X=persisted" });
    const s2 = await call(c, "shell", { sandbox_id: id, session_id: s1.session_id, command: "pwd; echo $X" });
    assert.equal(s2.session_id, s1.session_id);
    assert.match(s2.output, /\/tmp[\s\S]*persisted/);
    console.log(`${tag}: shell session ${s1.session_id} kept its cwd`);

    await call(c, "write_file", { sandbox_id: id, path: "n.txt", content: "from node\n" });
    assert.deepEqual(await call(c, "read_file", { sandbox_id: id, path: "/home/user/n.txt" }), {
      content: "from node\n",
      base64: false,
      size: 10,
    });
    const bytes = Buffer.from([0, 0xff, 7]).toString("base64");
    await call(c, "write_file", { sandbox_id: id, path: "b.bin", content: bytes, base64: true });
    assert.deepEqual(await call(c, "read_file", { sandbox_id: id, path: "b.bin" }), { content: bytes, base64: true, size: 3 });
    const res = await c.readResource({ uri: `airlock://sandboxes/${id}/files/home/user/n.txt` });
    assert.equal(res.contents[0].text, "from node\n");
    console.log(`${tag}: files written and read (text, base64, as a resource)`);

    // Aborting a call kills its command: over 2026-07-28 HTTP by dropping
    // the request (there is no session to send notifications/cancelled
    // to), before it by that notification.
    const sleeping = async () =>
      (await call(c, "run_command", { sandbox_id: id, command: "ps -eo args" })).stdout.split("\n").includes("sleep 301");
    const abort = new AbortController();
    const pending = c.callTool({ name: "run_command", arguments: { sandbox_id: id, command: "sleep 301" } }, { signal: abort.signal });
    pending.catch(() => {});
    await until(`${tag}: sleep 301 started`, 20000, sleeping);
    abort.abort();
    await assert.rejects(pending);
    await until(`${tag}: the aborted call's command ended`, 10000, async () => !(await sleeping()));
    console.log(`${tag}: an aborted call killed its command`);

    await call(c, "sandbox_destroy", { sandbox_id: id });
    const gone = await toolError(c, "run_command", { sandbox_id: id, command: "true" });
    assert.match(gone, /sandbox_create/);
    const unknown = await toolError(c, "read_file", { sandbox_id: "sb-0000000000000000", path: "x" });
    assert.match(unknown, /not found/);
    console.log(`${tag}: destroyed; a gone or unknown sandbox is a tool error`);
  } finally {
    await c.close();
  }
}

// asked: a command held by its sandbox's approval asks this client's user,
// in the way the revision has, and the answer (allow, this once) lets it
// through.
async function asked(kind, rev) {
  const tag = `${kind} ${rev.name}`;
  const c = new Client({ name: "airlock-mcpnode2", version: "1.0.0" }, { ...rev.opts, capabilities: { elicitation: {} } });
  const questions = [];
  c.setRequestHandler("elicitation/create", async (req) => {
    questions.push(req.params);
    return { action: "accept", content: { decision: "allow" } };
  });
  await c.connect(transports[kind]());
  try {
    assert.equal(c.getNegotiatedProtocolVersion(), rev.want, `${tag}: negotiated revision`);
    const run = await call(c, "run_command", { sandbox_id: askSandbox, command: "curl -s -i --max-time 60 http://denied.test/" });
    assert.match(run.stdout, / 200 /, `${tag}: curl after allowing`);
    assert.equal(questions.length, 1, `${tag}: questions asked`);
    assert.match(questions[0].message, /denied\.test:80/);
    assert.equal(run.approvals?.length, 1, `${tag}: approvals in the result`);
    assert.equal(run.approvals[0].state, "allowed");
    console.log(`${tag}: asked about ${run.approvals[0].id}; allowed, curl got 200`);
  } finally {
    await c.close();
  }
}

try {
  for (const rev of revisions) {
    for (const kind of ["http", "stdio"]) await flow(kind, rev);
  }
  if (askSandbox) {
    for (const rev of revisions.filter((r) => r.want >= "2025-06-18")) {
      for (const kind of ["http", "stdio"]) await asked(kind, rev);
    }
  }
  if (dataDir) {
    for (const rev of revisions.filter((r) => r.name === "auto" || r.name === "default")) await flow("embedded", rev);
  }
  console.log("ok");
} catch (err) {
  console.error(`FAIL: ${err.stack ?? err}`);
  process.exit(1);
}
