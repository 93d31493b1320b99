// Sessions (a shell kept between calls) and their terminals (a WebSocket).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Airlock, ConflictError, InvalidError, NotFoundError, type Terminal, type WebSocketLike } from "@airlockhq/sdk";
import { airlock, sandbox } from "./env.js";

/** readUntil reads a terminal until its output holds want, and returns all it read. */
async function readUntil(term: Terminal, want: string): Promise<string> {
  const dec = new TextDecoder();
  let s = "";
  const it = term[Symbol.asyncIterator]();
  const deadline = Date.now() + 20_000;
  while (!s.includes(want)) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`no ${JSON.stringify(want)} in ${JSON.stringify(s)}`)), deadline - Date.now())));
    const r = await Promise.race([it.next(), late]).finally(() => clearTimeout(timer));
    if (r.done) throw new Error(`terminal ended before ${JSON.stringify(want)}: ${JSON.stringify(s)}`);
    s += dec.decode(r.value, { stream: true });
  }
  return s;
}

test("a session keeps the shell's state between execs", async () => {
  const sb = await sandbox();
  const s = await sb.sessions.create({ cwd: "/tmp", env: { WHO: "sdk" } });
  assert.equal(s.mode, "exec");
  assert.equal((await sb.sessions.exec(s.id, "mkdir -p x && cd x && export N=5")).exit_code, 0);
  const r = await sb.sessions.exec(s.id, 'echo "$PWD $N $WHO"; false');
  assert.equal(r.output, "/tmp/x 5 sdk\n");
  assert.equal(r.exit_code, 1);
  const timed = await sb.sessions.exec(s.id, "sleep 30", { timeoutS: 1 });
  assert.ok(timed.timed_out);
  assert.ok((await sb.sessions.list()).some((x) => x.id === s.id));
  await sb.sessions.delete(s.id);
  await assert.rejects(sb.sessions.exec(s.id, "true"), NotFoundError);
});

test("a terminal: type, read, resize, detach, re-attach at an offset, and its end", async () => {
  const sb = await sandbox();
  const s = await sb.sessions.create({ mode: "interactive", cols: 80, rows: 24 });
  await assert.rejects(sb.sessions.exec(s.id, "true"), ConflictError);

  const term = await sb.sessions.attach(s.id);
  term.write("echo $((6*7))\n");
  const first = await readUntil(term, "42");
  term.resize(100, 30);
  assert.throws(() => term.resize(0, 30), InvalidError);
  term.write("stty size\n");
  await readUntil(term, "30 100");
  const offset = term.offset;
  assert.ok(offset >= first.length);
  term.close();

  // Re-attached at the offset, nothing is repeated; from 0, the scrollback comes first.
  const again = await sb.sessions.attach(s.id, { offset });
  again.write("echo again\n");
  const more = await readUntil(again, "again\r\n");
  assert.ok(!more.includes("42"), `re-attached output repeats what was read: ${JSON.stringify(more)}`);
  const whole = await sb.sessions.attach(s.id);
  assert.ok((await readUntil(whole, "again")).includes("42"));
  whole.close();

  // The shell exits: the iteration ends and says how.
  again.write("exit 3\n");
  for await (const _ of again) {
    // the rest of the output
  }
  assert.deepEqual(again.end, { exited: true, exitCode: 3, signal: 0 });

  // A session that is not there refuses the attach with the API's error.
  await assert.rejects(sb.sessions.attach("ses-nope"), NotFoundError);
  const cast = await sb.sessions.cast(s.id);
  assert.match(cast.split("\n")[0]!, /"version":\s*2/);
});

test("a terminal ends with the session's error when the session is deleted", async () => {
  const sb = await sandbox();
  const s = await sb.sessions.create();
  const term = await sb.sessions.attach(s.id);
  await sb.sessions.delete(s.id);
  for await (const _ of term) {
    // scrollback, if any
  }
  assert.equal(term.end?.exited, false);
  assert.ok(term.end?.error, "the end carries the server's error");
});

test("a terminal over the platform's own WebSocket (what browsers and Node 22 have)", async (t) => {
  const G = (globalThis as { WebSocket?: new (url: string, opts: unknown) => WebSocketLike }).WebSocket;
  if (!G) return t.skip("no global WebSocket in this node (e2e/sdkts_test.go runs it with --experimental-websocket)");
  let made = 0;
  const client = new Airlock({
    url: airlock.url,
    apiKey: process.env.AIRLOCK_API_KEY,
    webSocket: (url, headers) => {
      made++;
      return new G(url, { headers });
    },
  });
  const sb = client.sandbox((await sandbox()).id);
  const s = await sb.sessions.create({ mode: "interactive" });
  const term = await sb.sessions.attach(s.id);
  term.write("echo via-$((1+2))\n");
  await readUntil(term, "via-3");
  term.close();
  // Its refused handshake says nothing; the SDK asks the API why.
  await assert.rejects(sb.sessions.attach("ses-nope"), NotFoundError);
  assert.equal(made, 2);
});
