// Commands: one-shot, streamed as an async iterator, in the background,
// and re-attached to by offset and by exec id.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PidLimitError, LimitExceededError, NotFoundError, InvalidError, type OutputChunk } from "@airlockhq/sdk";
import { decode, sandbox, until } from "./env.js";

test("exec: shell string, argv, stdin, env, exit code", async () => {
  const sb = await sandbox();
  const r = await sb.exec("echo out; echo err >&2; exit 3");
  assert.equal(r.stdout, "out\n");
  assert.equal(r.stderr, "err\n");
  assert.equal(r.exit_code, 3);
  assert.ok(r.exec_id, "the result names the command in the audit log");

  const argv = await sb.exec({ cmd: ["sh", "-c", 'printf "%s|%s" "$1" "$GREETING"', "sh", "a b"], env: { GREETING: "hi" } });
  assert.equal(argv.stdout, "a b|hi");
  const cat = await sb.exec({ cmd: ["cat"], stdin: "piped in" });
  assert.equal(cat.stdout, "piped in");
  await assert.rejects(sb.exec({ cmd: ["true"], command: "true" }), InvalidError);
});

test("execStream: output as it comes, then the exit", async () => {
  const sb = await sandbox();
  const stream = await sb.execStream("for i in 1 2 3; do echo line$i; sleep 0.2; done; echo oops >&2; exit 7");
  const chunks: OutputChunk[] = [];
  const arrivals: number[] = [];
  for await (const c of stream) {
    chunks.push(c);
    arrivals.push(Date.now());
  }
  assert.equal(decode(chunks.filter((c) => c.stream === "stdout").map((c) => c.data)), "line1\nline2\nline3\n");
  assert.equal(decode(chunks.filter((c) => c.stream === "stderr").map((c) => c.data)), "oops\n");
  assert.ok(arrivals.length >= 3 && arrivals[arrivals.length - 1]! - arrivals[0]! >= 300, "the lines came as they were printed, not at the end");
  assert.equal(stream.exit?.exit_code, 7);
  assert.ok(stream.execId && stream.pid, "the start event's exec id and pid");
  // Offsets count both streams together.
  let offset = 0;
  for (const c of chunks) {
    assert.equal(c.offset, offset);
    offset += c.data.length;
  }

  // The command by its exec id, after the fact, and its kept output.
  const info = await sb.execs.get(stream.execId!);
  assert.equal(info.state, "exited");
  assert.equal(info.exit?.exit_code, 7);
  const again = await sb.execs.output(stream.execId!, { offset: 6 });
  assert.equal(await again.text(), "line2\nline3\noops\n");
  assert.equal(again.exit?.exit_code, 7);

  // wait() drains a stream nobody iterates; big output is uncapped.
  const big = await sb.execStream(["head", "-c", String(3 << 20), "/dev/zero"]);
  assert.equal((await big.wait()).exit_code, 0);
});

test("execStream: aborting the signal ends the command", async () => {
  const sb = await sandbox();
  const ac = new AbortController();
  const stream = await sb.execStream("echo started; sleep 60", { signal: ac.signal });
  const t0 = Date.now();
  await assert.rejects(
    (async () => {
      for await (const c of stream) {
        if (new TextDecoder().decode(c.data).includes("started")) ac.abort();
      }
    })(),
    (e: Error) => e.name === "AbortError",
  );
  assert.ok(Date.now() - t0 < 30_000);
  await until("the command to end", async () => ((await sb.execs.get(stream.execId!)).state !== "running" ? true : undefined));
});

test("background processes: start, list, follow, stdin, signal, re-attach", async () => {
  const sb = await sandbox();
  const p = await sb.processes.start("echo ready; while read line; do echo got:$line; done; echo eof", { tag: "reader" });
  assert.equal(p.tag, "reader");
  assert.ok(p.pid > 0 && p.exec_id);
  const listed = await sb.processes.list();
  assert.ok(listed.some((q) => q.pid === p.pid && q.state === "running" && q.tag === "reader"));

  assert.equal(await sb.processes.writeStdin(p.pid, "one\n"), 4);
  await sb.processes.writeStdin(p.pid, new Blob(["two\n"]));
  // Read what is kept so far, without following: it stops at the end.
  const sofar = await until("the process's output", async () => {
    const out = await sb.processes.output(p.pid);
    const s = await out.text();
    return s.includes("got:two") ? { s, out } : undefined;
  });
  assert.equal(sofar.s, "ready\ngot:one\ngot:two\n");
  assert.equal(sofar.out.exit, undefined, "still running");
  assert.equal(sofar.out.offset, sofar.s.length);

  // Re-attach from where that read stopped and follow to the end.
  await sb.processes.closeStdin(p.pid);
  const rest = await sb.processes.output(p.pid, { offset: sofar.out.offset, follow: true });
  assert.equal(await rest.text(), "eof\n");
  assert.equal(rest.exit?.exit_code, 0);

  // Signals.
  const sleeper = await sb.processes.start(["sleep", "600"]);
  await sb.processes.signal(sleeper.pid, "TERM");
  const ended = await sb.processes.output(sleeper.pid, { follow: true });
  await ended.text();
  assert.equal(ended.exit?.signal, 15);
  await assert.rejects(sb.processes.signal(sleeper.pid, "NOPE"), InvalidError);
  await assert.rejects(sb.processes.output(99999), NotFoundError);
});

test("pid limit: a PidLimitError is a LimitExceededError", async () => {
  const sb = await sandbox({ pids: 8 });
  const procs = [];
  let err: unknown;
  for (let i = 0; i < 12 && !err; i++) {
    try {
      procs.push(await sb.processes.start(["sleep", "600"]));
    } catch (e) {
      err = e;
    }
  }
  assert.ok(err instanceof PidLimitError && err instanceof LimitExceededError, `got ${err} after ${procs.length} processes`);
  assert.equal(err.status, 429);
});
