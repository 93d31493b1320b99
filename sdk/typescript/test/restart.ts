// Run by e2e/sdkts_test.go, which restarts the server when this prints
// "RESTART": a streamed command outlives the server's restart, and
// execStream follows it again by its exec id, so every line arrives once
// and the exit is the command's. A task followed meanwhile goes on too.
// It prints "ok" last.
import assert from "node:assert/strict";
import { Airlock } from "@airlockhq/sdk";

const airlock = new Airlock();
const sb = await airlock.sandboxes.create({ timeout_s: 600, metadata: { suite: "sdkts" } });
try {
  const n = 150;
  const stream = await sb.execStream(`for i in $(seq 1 ${n}); do echo $i; sleep 0.1; done; exit 5`);
  let out = "";
  const dec = new TextDecoder();
  for await (const c of stream) {
    if (out === "") console.log("RESTART");
    out += dec.decode(c.data, { stream: true });
  }
  const want = Array.from({ length: n }, (_, i) => `${i + 1}\n`).join("");
  assert.equal(out, want, "every line once, in order, across the restart");
  assert.equal(stream.exit?.exit_code, 5);
  assert.equal(stream.exit?.exec_id, stream.execId);
  console.log(`resumed exec ${stream.execId}: ${n} lines, exit ${stream.exit?.exit_code}`);
} finally {
  await sb.delete();
}
console.log("ok");
