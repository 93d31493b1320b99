// Tasks: a generic harness run, its events streamed, its artifacts read.
import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidError, NotFoundError } from "@airlockhq/sdk";
import { airlock, text } from "./env.js";

const harness = `#!/bin/sh
read -r prompt || true
echo "working on: $prompt"
echo '{"type":"command","argv":["echo","fixed"],"exit_code":0}'
echo fixed > answer.txt
echo done
`;

test("a task: create, follow its events, artifacts, diff, list", async () => {
  const task = await airlock.tasks.create({
    harness: "generic",
    prompt: "fix it",
    command: ["./harness.sh"],
    files: { "harness.sh": harness, "src/main.txt": "broken\n" },
    artifacts: ["answer.txt"],
  });
  assert.ok(["queued", "running"].includes(task.state));

  const types: string[] = [];
  const stream = await airlock.tasks.follow(task.id);
  for await (const e of stream) types.push(e.type);
  assert.deepEqual(types, ["task.started", "message", "command", "message", "file_change", "task.finished"]);
  assert.equal(stream.last, types.length);

  const done = await airlock.tasks.wait(task.id);
  assert.equal(done.state, "succeeded");
  assert.equal(done.summary, "done");
  assert.equal(done.exit_code, 0);

  // Resuming after event 2 gives the rest; the stored list agrees.
  const resumed = [];
  for await (const e of await airlock.tasks.follow(task.id, { after: 2 })) resumed.push(e.seq);
  assert.deepEqual(resumed, [3, 4, 5, 6]);
  const stored = await airlock.tasks.events(task.id);
  assert.equal(stored[1]?.text, "working on: fix it");

  const arts = await airlock.tasks.artifacts(task.id);
  assert.deepEqual(arts.artifacts.map((a) => a.path), ["answer.txt"]);
  assert.match(arts.diff?.text ?? "", /\+\+\+ b\/answer\.txt/);
  assert.equal(await text(await airlock.tasks.readArtifact(task.id, "answer.txt")), "fixed\n");
  assert.match(await airlock.tasks.readDiff(task.id), /\+fixed/);

  const page = await airlock.tasks.list({ states: ["succeeded"], harness: "generic" });
  assert.ok(page.tasks.some((t) => t.id === task.id));
  await assert.rejects(airlock.tasks.get("tsk_nope"), NotFoundError);
  await assert.rejects(airlock.tasks.create({ harness: "generic" }), InvalidError);
});

test("a task cancelled while it runs", async () => {
  const task = await airlock.tasks.create({ harness: "generic", command: ["sleep", "600"] });
  const stream = await airlock.tasks.follow(task.id);
  for await (const e of stream) {
    if (e.type === "task.started") break;
  }
  const cancelled = await airlock.tasks.cancel(task.id);
  assert.equal(cancelled.state, "cancelled");
});
