// Volumes and templates built from an image, through Airlock's E2B facade
// with the unmodified e2b SDK. e2e/e2b_volumes_test.go runs it against a
// real `airlock serve`:
//
//   node volumes.mjs URL API_KEY ADMIN_KEY IMAGE
//
// IMAGE is a reference in a registry the server may pull from. It prints
// one line per step, "SANDBOX <id>", "VOLUME <name>" and "TEMPLATE <name>"
// for the Go side to check, and "ok" last; it exits 1 on the first failure.
import "./guard.mjs";
import assert from "node:assert/strict";

const [url, key, adminKey, image] = process.argv.slice(2);
if (!url || !key || !adminKey || !image) {
  console.error("usage: node volumes.mjs URL API_KEY ADMIN_KEY IMAGE");
  process.exit(2);
}
process.env.E2B_API_URL = `${url}/e2b`;
process.env.E2B_SANDBOX_URL = `${url}/e2b/envd`;
// Where the SDK sends a volume's content calls (else api.E2B_DOMAIN).
process.env.E2B_VOLUME_API_URL = `${url}/e2b`;
process.env.E2B_DOMAIN = "localhost";
process.env.E2B_API_KEY = key;
const { Sandbox, Volume, VolumeError, VolumeNotFoundError, Template, BuildError, waitForFile } = await import("e2b");

const run = `r${Date.now().toString(36)}`;

function step(name) {
  console.log(`- ${name}`);
}

// status is the HTTP status an SDK error names ("409: ...").
const status = (code, cls, pattern) => (err) =>
  (!cls || err instanceof cls) && err.message.startsWith(`${code}: `) && (!pattern || pattern.test(err.message));

const name = `data-${run}`;
step("Volume.create: the volume's id is its name");
const vol = await Volume.create(name);
console.log(`VOLUME ${name}`);
assert.equal(vol.volumeId, name);
assert.equal(vol.name, name);
await assert.rejects(Volume.create(name), status(409, VolumeError));

step("Volume.list and Volume.getInfo");
assert.deepEqual((await Volume.list()).filter((v) => v.volumeId === name), [{ volumeId: name, name }]);
assert.equal((await Volume.getInfo(name)).name, name);
await assert.rejects(Volume.getInfo(`none-${run}`), VolumeNotFoundError);

step("the volume content API (no sandbox) is refused, naming the workaround");
await assert.rejects(vol.readFile("/kept.txt"), status(501, VolumeError, /mount it in a sandbox/));
await assert.rejects(vol.writeFile("/kept.txt", "x"), status(501, VolumeError, /mount it in a sandbox/));
await assert.rejects(vol.list("/"), status(501, VolumeError));

step("a sandbox mounting the volume writes on it");
const a = await Sandbox.create({ volumeMounts: { "/mnt/data": vol }, metadata: { run }, timeoutMs: 300_000 });
console.log(`SANDBOX ${a.sandboxId}`);
assert.deepEqual((await Sandbox.getInfo(a.sandboxId)).volumeMounts, [{ name, path: "/mnt/data" }]);
await a.files.write("/mnt/data/kept.txt", "written by the first sandbox");
assert.equal((await a.commands.run("echo from-a-command > /mnt/data/sub.txt && id -u")).stdout, "1000\n");
await a.files.write("/home/user/not-kept.txt", "the sandbox's own");

step("a second read-write mount, and destroy while mounted, are 409");
await assert.rejects(Sandbox.create({ volumeMounts: { "/mnt/data": name } }), status(409));
await assert.rejects(Volume.destroy(name), status(409, VolumeError, /mounted/));
await a.kill();

step("the next sandbox mounting it (elsewhere) reads what the first wrote");
const b = await Sandbox.create({ volumeMounts: { "/mnt/other": name }, metadata: { run }, timeoutMs: 300_000 });
console.log(`SANDBOX ${b.sandboxId}`);
assert.equal(await b.files.read("/mnt/other/kept.txt"), "written by the first sandbox");
assert.equal((await b.commands.run("cat /mnt/other/sub.txt")).stdout, "from-a-command\n");
assert.deepEqual((await b.files.list("/mnt/other")).map((e) => e.name).sort(), ["kept.txt", "sub.txt"]);
assert.equal(await b.files.exists("/home/user/not-kept.txt"), false);
await b.kill();

step("Volume.destroy: true, then false; gone from the list");
assert.equal(await Volume.destroy(name), true);
assert.equal(await Volume.destroy(name), false);
assert.deepEqual((await Volume.list()).filter((v) => v.volumeId === name), []);

const tname = `e2b-img-${run}`;
step("Template.build from an image needs an admin key");
await assert.rejects(Template.build(Template().fromImage(image), tname), status(403, BuildError, /admin key/));

step("a build with steps, or from a template, is refused");
await assert.rejects(Template.build(Template().fromImage(image).runCmd("true"), tname, { apiKey: adminKey }), status(400, BuildError, /steps \(RUN\)/));
await assert.rejects(Template.build(Template().fromTemplate("base"), tname, { apiKey: adminKey }), status(400, BuildError, /fromTemplate/));
await assert.rejects(Template.build(Template().fromImage(image), `${tname}:v1`, { apiKey: adminKey }), status(400, BuildError, /tags/));

step("Template.build(Template().fromImage(IMAGE)) imports it, logging as it goes");
const logs = [];
const built = await Template.build(Template().fromImage(image), tname, { apiKey: adminKey, onBuildLogs: (e) => logs.push(e.message) });
console.log(`TEMPLATE ${tname}`);
assert.equal(built.templateId, tname);
const log = logs.join("\n");
assert.match(log, /importing image .* into template/);
assert.match(log, /layer 2\/2 done/);
assert.match(log, new RegExp(`template ${tname} ready: .*@sha256:`));
assert.equal(await Template.exists(tname, { apiKey: adminKey }), true);
assert.equal(await Template.exists(`none-${run}`, { apiKey: adminKey }), false);

step("a tenant's sandbox starts from the template, on the image's files");
const c = await Sandbox.create(tname, { metadata: { run }, timeoutMs: 300_000 });
console.log(`SANDBOX ${c.sandboxId}`);
assert.equal((await Sandbox.getInfo(c.sandboxId)).templateId, tname);
assert.equal(await c.files.read("/etc/os-release"), "ID=testimage\n");
await c.kill();

// The image has sh and cat only: no server to wait for on a port. The
// start command's stdin is held open, so cat runs until the sandbox ends.
step("setStartCmd: each sandbox from the template runs it, handed out once it is ready");
await assert.rejects(Template.build(Template().fromImage(image).setReadyCmd(waitForFile("/tmp/started")), `${tname}-start`, { apiKey: adminKey }),
  status(400, BuildError, /readyCmd without startCmd/));
await Template.build(Template().fromImage(image).setStartCmd("echo started > /tmp/started && exec cat", waitForFile("/tmp/started")),
  `${tname}-start`, { apiKey: adminKey });
const d = await Sandbox.create(`${tname}-start`, { metadata: { run }, timeoutMs: 300_000 });
assert.equal(await d.files.read("/tmp/started"), "started\n");
assert.deepEqual((await d.commands.list()).map((p) => p.cmd), ["echo started > /tmp/started && exec cat"]);
await d.kill();

console.log("ok");
