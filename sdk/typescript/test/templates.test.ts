// Templates: listed, read, and one built from a build sandbox (admin key).
import assert from "node:assert/strict";
import { test } from "node:test";
import { NotFoundError } from "@airlockhq/sdk";
import { airlock, sandbox } from "./env.js";

test("templates: list, get, commit a build sandbox, create from it, delete", async () => {
  const list = await airlock.templates.list();
  assert.equal(list[0]?.name, "base");
  assert.equal((await airlock.templates.get("base")).name, "base");
  await assert.rejects(airlock.templates.get("no-such-template"), NotFoundError);

  const name = `sdk-${Date.now().toString(36)}`;
  const build = await sandbox({ build: true });
  await build.exec("mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho built\\n' > /usr/local/bin/sdk-hello && chmod +x /usr/local/bin/sdk-hello");
  const tpl = await airlock.templates.commit({ name, sandbox_id: build.id, description: "from the TypeScript SDK", labels: { by: "sdkts" } });
  assert.equal(tpl.name, name);
  assert.equal(tpl.labels?.by, "sdkts");
  assert.ok((await airlock.templates.list()).some((t) => t.name === name));

  const sb = await sandbox({ template: name });
  assert.equal((await sb.exec("sdk-hello")).stdout, "built\n");
  await sb.delete();
  await airlock.templates.delete(name);
  await assert.rejects(airlock.templates.get(name), NotFoundError);
});
