// Files: streamed uploads and downloads (ReadableStream), listings, moves.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { InvalidError, NotFoundError } from "@airlockhq/sdk";
import { sandbox, text } from "./env.js";

/** chunks is a stream of n pseudo-random chunks of size bytes, and their SHA-256 once read. */
function chunks(n: number, size: number): { stream: ReadableStream<Uint8Array>; digest: () => string; pulled: () => number } {
  const h = createHash("sha256");
  let i = 0, x = 12345;
  return {
    stream: new ReadableStream<Uint8Array>({
      pull(c) {
        if (i++ === n) return c.close();
        const b = new Uint8Array(size);
        for (let j = 0; j < size; j++) b[j] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
        h.update(b);
        c.enqueue(b);
      },
    }),
    digest: () => h.copy().digest("hex"),
    pulled: () => i,
  };
}

test("a streamed upload and download of 8 MiB", async () => {
  const sb = await sandbox();
  const src = chunks(128, 64 << 10);
  const w = await sb.files.write("big/data.bin", src.stream, { mode: 0o600 });
  assert.equal(w.size, 8 << 20);
  const want = src.digest();

  const [entry] = (await sb.files.list("big")).filter((e) => e.name === "data.bin");
  assert.equal(entry?.size, 8 << 20);
  assert.equal(entry?.mode, "0600");
  assert.equal(entry?.type, "file");

  const got = createHash("sha256");
  let n = 0, reads = 0;
  const body = await sb.files.read("big/data.bin");
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    got.update(value);
    n += value.length;
    reads++;
  }
  assert.equal(n, 8 << 20);
  assert.equal(got.digest("hex"), want);
  assert.ok(reads > 1, "the download came in pieces");
  assert.equal((await sb.exec("sha256sum big/data.bin | cut -d' ' -f1")).stdout.trim(), want);
});

test("write, read, list, mkdir, move, remove", async () => {
  const sb = await sandbox();
  await sb.files.write("/home/user/a.txt", "hello");
  assert.equal(await sb.files.readText("a.txt"), "hello");
  await sb.files.write("bytes.bin", new Uint8Array([0, 1, 2, 255]));
  assert.deepEqual([...(await sb.files.readBytes("bytes.bin"))], [0, 1, 2, 255]);
  await sb.files.write("blob.txt", new Blob(["from a ", "blob"]));
  assert.equal(await text(await sb.files.read("blob.txt")), "from a blob");

  await sb.files.mkdir("d/e", { mode: "0700" });
  await sb.files.move("a.txt", "d/e/b.txt");
  const names = (await sb.files.list("d/e")).map((e) => e.name);
  assert.deepEqual(names, ["b.txt"]);
  assert.equal((await sb.files.list("d")).find((e) => e.name === "e")?.mode, "0700");
  await assert.rejects(sb.files.readText("a.txt"), NotFoundError);
  await assert.rejects(sb.files.read("d"), (e: unknown) => e instanceof InvalidError && /directory/.test(e.message));
  await assert.rejects(sb.files.remove("d"), (e: unknown) => e instanceof Error && !(e instanceof NotFoundError));
  await sb.files.remove("d", { recursive: true });
  await assert.rejects(sb.files.list("d"), NotFoundError);
});
