// The package's code runs in browsers too: dist/ imports nothing but its
// own modules (the ws fallback is a dynamic import behind a Node check),
// and names no Node global but through globalThis behind a feature check.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

test("dist/ imports only itself and uses no Node global", () => {
  const dist = fileURLToPath(new URL("../../dist/", import.meta.url));
  const files = readdirSync(dist).filter((f) => f.endsWith(".js"));
  assert.ok(files.includes("index.js"));
  for (const f of files) {
    const src = readFileSync(dist + f, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
    for (const m of src.matchAll(/(?:^|\n)\s*(?:import|export)[^;]*?from\s*"([^"]+)"/g)) {
      assert.match(m[1]!, /^\.\/[\w.]+\.js$/, `${f} imports ${m[1]}`);
    }
    assert.doesNotMatch(src, /\brequire\(|\bBuffer\b|\bprocess\.|from "node:/, `${f} uses a Node-only API`);
  }
});
