// README.md's quick start is test/quickstart.ts, run here as written.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const pkg = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));

test("README quick start runs and is the README's", async () => {
  const logged: string[] = [];
  const log = console.log;
  console.log = (...a: unknown[]) => logged.push(a.join(" "));
  try {
    await import("./quickstart.js");
  } finally {
    console.log = log;
  }
  assert.match(logged[0] ?? "", /^hello from \S+$/);
  assert.deepEqual(logged.slice(1), ["stdout hi from python", "exit 0"]);

  const block = readFileSync(pkg("test/quickstart.ts"), "utf8").split("// quickstart:begin\n")[1]!.split("// quickstart:end")[0]!;
  const readme = readFileSync(pkg("README.md"), "utf8");
  assert.ok(readme.includes("```ts\n" + block + "```\n"), `README.md's quick start is not test/quickstart.ts's:\n${block}`);
});
