// Drives Airlock's MCP bridge with the official TypeScript SDK, over
// streamable HTTP and over stdio (spawning `airlock mcp`), as a harness
// would. e2e/mcpnode_test.go runs it against a real `airlock serve`:
//
//   node run.mjs URL API_KEY AIRLOCK_BINARY [ASK_SANDBOX]
//
// With ASK_SANDBOX, a sandbox whose network policy asks, it also curls
// denied.test there through a client that declared elicitation: the held
// connection's approval must reach it as elicitation/create, and its
// answer must let curl through.
//
// It prints one line per step and exits 1 on the first failure.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, key, bin, askSandbox] = process.argv.slice(2);
if (!url || !key || !bin) {
  console.error("usage: node run.mjs URL API_KEY AIRLOCK_BINARY [ASK_SANDBOX]");
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
};

// negotiated records the revision the client settles on: the v1 client
// tells its transport (setProtocolVersion) and keeps no getter of its own.
function negotiated(t) {
  const set = t.setProtocolVersion?.bind(t);
  t.setProtocolVersion = (v) => {
    t.negotiated = v;
    set?.(v);
  };
  return t;
}

// call runs a tool that must succeed; the SDK checks structuredContent
// against the tool's output schema.
async function call(c, name, args) {
  const res = await c.callTool({ name, arguments: args });
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

async function flow(kind) {
  const c = new Client({ name: "airlock-mcpnode", version: "1.0.0" });
  const t = negotiated(transports[kind]());
  await c.connect(t);
  try {
    // 1.x knows no 2026-07-28 (no server/discover): it initializes at its
    // newest revision, and Airlock serves that one with a session.
    assert.equal(t.negotiated, "2025-11-25", `${kind}: negotiated revision`);
    if (kind === "http") assert.ok(t.sessionId, "http: no Mcp-Session-Id at 2025-11-25");
    const { tools } = await c.listTools();
    const names = tools.map((t) => t.name).sort();
    for (const want of ["sandbox_create", "run_command", "shell", "write_file", "read_file", "sandbox_destroy"]) {
      assert.ok(names.includes(want), `tools/list lacks ${want}: ${names}`);
    }
    for (const t of tools) {
      assert.ok(t.inputSchema?.properties, `${t.name}: no input schema`);
      assert.ok(t.outputSchema?.properties, `${t.name}: no output schema`);
    }
    console.log(`${kind}: negotiated ${t.negotiated}; ${tools.length} tools with schemas`);

    const { sandbox_id: id } = await call(c, "sandbox_create", { timeout_s: 120 });
    assert.match(id, /^sb-/);
    const run = await call(c, "run_command", { sandbox_id: id, command: "echo hi; echo oops >&2; exit 4" });
    assert.deepEqual([run.exit_code, run.stdout, run.stderr], [4, "hi\n", "oops\n"]);
    console.log(`${kind}: run_command in ${id}`);

    const s1 = await call(c, "shell", { sandbox_id: id, command: "cd /tmp && X=persisted" });
    const s2 = await call(c, "shell", { sandbox_id: id, session_id: s1.session_id, command: "pwd; echo $X" });
    assert.equal(s2.session_id, s1.session_id);
    assert.match(s2.output, /\/tmp[\s\S]*persisted/);
    console.log(`${kind}: shell session ${s1.session_id} kept its cwd`);

    await call(c, "write_file", { sandbox_id: id, path: "n.txt", content: "from node\n" });
    assert.deepEqual(await call(c, "read_file", { sandbox_id: id, path: "/home/user/n.txt" }), {
      content: "from node\n",
      base64: false,
      size: 10,
    });
    const bytes = Buffer.from([0, 0xff, 7]).toString("base64");
    await call(c, "write_file", { sandbox_id: id, path: "b.bin", content: bytes, base64: true });
    assert.deepEqual(await call(c, "read_file", { sandbox_id: id, path: "b.bin" }), { content: bytes, base64: true, size: 3 });
    console.log(`${kind}: files written and read (text and base64)`);

    await call(c, "sandbox_destroy", { sandbox_id: id });
    const gone = await toolError(c, "run_command", { sandbox_id: id, command: "true" });
    assert.match(gone, /sandbox_create/);
    const unknown = await toolError(c, "read_file", { sandbox_id: "sb-0000000000000000", path: "x" });
    assert.match(unknown, /not found/);
    console.log(`${kind}: destroyed; a gone or unknown sandbox is a tool error: ${gone}`);
  } finally {
    await c.close();
  }
}

// asked: a command held by its sandbox's approval asks this client's user
// by elicitation, and the answer (allow, this once) lets it through.
async function asked(kind) {
  const c = new Client({ name: "airlock-mcpnode", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const questions = [];
  c.setRequestHandler(ElicitRequestSchema, async (req) => {
    questions.push(req.params);
    return { action: "accept", content: { decision: "allow" } };
  });
  await c.connect(transports[kind]());
  try {
    const run = await call(c, "run_command", { sandbox_id: askSandbox, command: "curl -s -i --max-time 60 http://denied.test/" });
    assert.match(run.stdout, / 200 /, `${kind}: curl after allowing`);
    assert.equal(questions.length, 1, `${kind}: questions asked`);
    assert.match(questions[0].message, /denied\.test:80/);
    assert.deepEqual(questions[0].requestedSchema.properties.decision.enum, ["allow", "deny"]);
    assert.equal(run.approvals?.length, 1, `${kind}: approvals in the result`);
    assert.equal(run.approvals[0].state, "allowed");
    console.log(`${kind}: asked about ${run.approvals[0].id} by elicitation; allowed, curl got 200`);
  } finally {
    await c.close();
  }
}

try {
  for (const kind of ["http", "stdio"]) await flow(kind);
  if (askSandbox) for (const kind of ["http", "stdio"]) await asked(kind);
  console.log("ok");
} catch (err) {
  console.error(`FAIL: ${err.stack ?? err}`);
  process.exit(1);
}
