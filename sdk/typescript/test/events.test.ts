// The tenant's event stream as an async iterator, resumed by id.
import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidError } from "@airlockhq/sdk";
import { airlock, sandbox } from "./env.js";

test("events: live, filtered, resumed after the last id", async () => {
  const ac = new AbortController();
  const stream = await airlock.events({ types: ["sandbox.created", "exec.exited", "sandbox.destroyed"], signal: ac.signal });
  // The stream is live once the call resolves: nothing after it is missed.
  const sb = await sandbox();
  await sb.exec("exit 4");
  await sb.delete();
  const seen: string[] = [];
  let execExit: Record<string, unknown> | undefined;
  for await (const e of stream) {
    if (e.sandbox_id !== sb.id) continue;
    seen.push(e.type);
    if (e.type === "exec.exited") execExit = e.data;
    if (e.type === "sandbox.destroyed") break;
  }
  assert.deepEqual(seen, ["sandbox.created", "exec.exited", "sandbox.destroyed"]);
  assert.equal(execExit?.exit_code, 4);
  const last = stream.lastId;
  assert.ok(last > 0);
  ac.abort();

  // From the start, the same events are there; after the last id, none of them.
  const replay = await airlock.events({ fromStart: true, types: ["sandbox.created"] });
  for await (const e of replay) {
    if (e.sandbox_id === sb.id) break;
  }
  assert.ok(replay.lastId > 0);
  const resumed = await airlock.events({ after: last, signal: AbortSignal.timeout(1500) });
  await assert.rejects(
    (async () => {
      for await (const e of resumed) assert.notEqual(e.sandbox_id, sb.id, `event ${e.id} came again after ${last}`);
    })(),
    (e: Error) => e.name === "TimeoutError" || e.name === "AbortError",
  );
  await assert.rejects(airlock.events({ types: ["no.such.type" as never] }), InvalidError);
});
