// The audit log: streamed, filtered, verified by the server, exported and
// checked offline with web APIs only (DecompressionStream, WebCrypto), and
// replayed as an asciicast.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Airlock, ForbiddenError } from "@airlockhq/sdk";
import { airlock, sandbox } from "./env.js";

/** untar reads a tar archive's regular files. */
function untar(b: Uint8Array<ArrayBuffer>): Map<string, Uint8Array<ArrayBuffer>> {
  const dec = new TextDecoder();
  const str = (o: number, n: number) => dec.decode(b.subarray(o, o + n)).replace(/\0.*$/s, "");
  const files = new Map<string, Uint8Array<ArrayBuffer>>();
  for (let o = 0; o + 512 <= b.length; ) {
    const name = str(o, 100);
    if (name === "") break;
    const size = parseInt(str(o + 124, 12).trim() || "0", 8);
    const prefix = str(o + 345, 155);
    if (str(o + 156, 1) === "0" || str(o + 156, 1) === "") files.set(prefix ? `${prefix}/${name}` : name, b.slice(o + 512, o + 512 + size));
    o += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

const hex = (b: ArrayBuffer) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, "0")).join("");
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

test("audit: events, verify, export, cast", async () => {
  const sb = await sandbox();
  const r = await sb.exec("echo audited");
  await sb.files.write("f.txt", "x");

  const all = await sb.audit.list();
  assert.equal(all[0]?.type, "sandbox.created");
  assert.deepEqual(all.map((e) => e.seq), all.map((_, i) => i + 1));
  for (let i = 1; i < all.length; i++) assert.equal(all[i]!.prev, all[i - 1]!.hash, "each event chains to the one before");

  const execs = [];
  for await (const e of await sb.audit.events({ types: ["exec.started", "exec.exited"] })) execs.push(e);
  assert.deepEqual(execs.map((e) => e.type), ["exec.started", "exec.exited"]);
  assert.equal(execs[0]!.data.exec_id, r.exec_id);
  // (Reading the log is a call on the sandbox: it records api.request events of its own.)
  const later = await sb.audit.list({ after: all.length - 2, limit: 2 });
  assert.deepEqual(later.map((e) => e.seq), [all.length - 1, all.length]);

  const v = await sb.audit.verify();
  assert.ok(v.ok, `verify: ${JSON.stringify(v)}`);
  assert.ok(v.events >= all.length);

  // The export, gunzipped and read with web APIs.
  const gz = await sb.audit.export();
  const tar = new Uint8Array(await new Response(gz.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());
  const files = untar(tar);
  const manifest = JSON.parse(new TextDecoder().decode(files.get("manifest.json")));
  assert.equal(manifest.format, "airlock-audit/1");
  assert.equal(manifest.sandbox, sb.id);
  const events = files.get("events.jsonl")!;
  assert.equal(new TextDecoder().decode(events).trim().split("\n").length, manifest.events);
  for (const [name, sum] of Object.entries(manifest.files as Record<string, string>)) {
    assert.equal(hex(await crypto.subtle.digest("SHA-256", files.get(name)!)), sum, `the SHA-256 of ${name}`);
  }
  assert.ok(files.has(`casts/${r.exec_id}.cast`), `a cast of the command: ${[...files.keys()]}`);

  // Its signature, checked against the server's audit key.
  const key = await airlock.auditKey();
  const { signature, ...signed } = manifest;
  assert.equal(signature.fingerprint, key.fingerprint);
  assert.equal(signature.public_key, key.public_key);
  const pub = await crypto.subtle.importKey("raw", unb64(key.public_key), { name: "Ed25519" }, false, ["verify"]);
  const ok = await crypto.subtle.verify({ name: "Ed25519" }, pub, unb64(signature.value), new TextEncoder().encode(JSON.stringify(signed)));
  assert.ok(ok, "the manifest's signature verifies with the server's audit key");
  const fp = "SHA256:" + btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", unb64(key.public_key))))).replace(/=+$/, "");
  assert.equal(fp, key.fingerprint);

  const cast = await sb.audit.cast({ execId: r.exec_id! });
  assert.match(cast, /audited/);

  // A sandbox token may not read its own audit log.
  const token = await sb.createToken(60);
  await assert.rejects(new Airlock({ url: airlock.url, apiKey: token.token }).sandbox(sb.id).audit.verify(), ForbiddenError);
});
