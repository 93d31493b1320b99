// src/types.gen.ts is what scripts/gen-types.mjs makes of the OpenAPI
// document, and the check fails both ways: a field the document has and
// the file lacks, and one the file has and the document lacks.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const doc = process.env.AIRLOCK_OPENAPI || join(root, "../../internal/api/openapi.json");
const committed = join(root, "src/types.gen.ts");
const tmp = mkdtempSync(join(tmpdir(), "airlock-sdkts-gen-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

function check(docPath: string, out: string): { code: number | null; output: string } {
  const r = spawnSync(process.execPath, [join(root, "scripts/gen-types.mjs"), "--check", "--doc", docPath, "--out", out], { encoding: "utf8" });
  return { code: r.status, output: r.stdout + r.stderr };
}

test("the committed types are the document's", () => {
  const r = check(doc, committed);
  assert.equal(r.code, 0, `run npm run gen in sdk/typescript:\n${r.output}`);
});

// The checks below compare against what the document makes now, so that
// they test the check itself, whether or not the committed file is current.
function fresh(): string {
  const out = join(tmp, "fresh.gen.ts");
  const r = spawnSync(process.execPath, [join(root, "scripts/gen-types.mjs"), "--doc", doc, "--out", out], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return out;
}

test("a field added to the document and not the SDK fails the check", () => {
  const d = JSON.parse(readFileSync(doc, "utf8"));
  d.components.schemas.Sandbox.properties.sdk_drift_probe = { type: "string", description: "added by the test" };
  const p = join(tmp, "added.json");
  writeFileSync(p, JSON.stringify(d));
  const r = check(p, fresh());
  assert.equal(r.code, 1, r.output);
  assert.match(r.output, /^\+ Sandbox: sdk_drift_probe\?: string;/m);
  assert.equal(r.output.match(/^[+-] /gm)?.length, 2, `only the field and its comment differ:\n${r.output}`);
});

test("a field the SDK has and the document lacks fails the check", () => {
  const text = readFileSync(fresh(), "utf8");
  const extra = text.replace("export interface Sandbox {\n", "export interface Sandbox {\n  sdk_only_field?: string;\n");
  assert.notEqual(extra, text);
  const p = join(tmp, "extra.gen.ts");
  writeFileSync(p, extra);
  const r = check(doc, p);
  assert.equal(r.code, 1, r.output);
  assert.match(r.output, /^- Sandbox: sdk_only_field\?: string;/m);
  assert.equal(r.output.match(/^[+-] /gm)?.length, 1, r.output);
});

test("a field removed from the document fails the check", () => {
  const d = JSON.parse(readFileSync(doc, "utf8"));
  delete d.components.schemas.ExecExit.properties.oom_killed;
  d.components.schemas.ExecExit.required = d.components.schemas.ExecExit.required.filter((f: string) => f !== "oom_killed");
  const p = join(tmp, "removed.json");
  writeFileSync(p, JSON.stringify(d));
  const r = check(p, fresh());
  assert.equal(r.code, 1, r.output);
  assert.match(r.output, /^- ExecExit: oom_killed: boolean;/m);
});
