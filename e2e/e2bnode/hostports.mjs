// Drives host-named sandbox ports with the unmodified e2b SDK, as an agent
// codebase would with E2B_DOMAIN set to the --e2b-domain of a server and no
// E2B_SANDBOX_URL: envd is then reached at https://49983-ID.DOMAIN and
// sandbox.getHost(port) names the sandbox's ports. e2e/e2b_hostports_test.go
// runs it with a TLS edge for *.DOMAIN that the SDK and the fetches below
// reach as their proxy, so nothing resolves DOMAIN and the guard still
// refuses every connection off loopback:
//
//   node hostports.mjs URL API_KEY DOMAIN PROXY_URL
//
// It prints one line per step, "SANDBOX <id>" for each sandbox, and "ok"
// last; it exits 1 on the first failure.
import "./guard.mjs";
import assert from "node:assert/strict";

const [url, key, domain, proxy] = process.argv.slice(2);
if (!url || !key || !domain || !proxy) {
  console.error("usage: node hostports.mjs URL API_KEY DOMAIN PROXY_URL");
  process.exit(2);
}
process.env.E2B_API_URL = `${url}/e2b`;
delete process.env.E2B_SANDBOX_URL;
process.env.E2B_DOMAIN = domain;
process.env.E2B_API_KEY = key;
const { Sandbox } = await import("e2b");
// The SDK's own undici: a fetch through the edge, as a browser or any
// HTTP client with the wildcard DNS name would make.
const { ProxyAgent, fetch } = await import("undici");
const agent = new ProxyAgent({ uri: proxy, proxyTunnel: true });
const get = (u, headers = {}) => fetch(u, { dispatcher: agent, headers });

function step(name) {
  console.log(`- ${name}`);
}

// until waits for the async cond() to hold, polling, or fails after ms.
async function until(what, cond, ms = 20000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

step("Sandbox.create without public traffic");
const sbx = await Sandbox.create({ proxy, network: { allowPublicTraffic: false } });
console.log(`SANDBOX ${sbx.sandboxId}`);
const pub = await Sandbox.create({ proxy });
console.log(`SANDBOX ${pub.sandboxId}`);
try {
  assert.equal(sbx.sandboxDomain, domain);
  assert.match(sbx.trafficAccessToken ?? "", /^att_[0-9a-f]{64}$/);
  assert.equal(pub.trafficAccessToken, undefined);
  assert.equal((await Sandbox.getInfo(sbx.sandboxId)).network?.allowPublicTraffic, false);

  step("envd at https://49983-ID.DOMAIN: commands and files");
  const hi = await sbx.commands.run("echo hi");
  assert.equal(hi.stdout, "hi\n");
  await sbx.files.write("www/index.html", "hello from the sandbox\n");
  assert.equal(await sbx.files.read("www/index.html"), "hello from the sandbox\n");
  assert.equal(await sbx.isRunning(), true);

  step("a web server in the sandbox, at sandbox.getHost(8000), with the traffic token");
  await sbx.commands.run("python3 -m http.server 8000 --directory www", { background: true });
  const host = sbx.getHost(8000);
  assert.equal(host, `8000-${sbx.sandboxId}.${domain}`);
  const token = { "e2b-traffic-access-token": sbx.trafficAccessToken };
  let res;
  await until("the sandbox's web server", async () => (res = await get(`https://${host}/index.html`, token)).status === 200);
  assert.equal(await res.text(), "hello from the sandbox\n");

  step("without the traffic token, or with another: 403 in E2B's shape");
  for (const headers of [{}, { "e2b-traffic-access-token": "att_" + "0".repeat(64) }]) {
    res = await get(`https://${host}/index.html`, headers);
    assert.equal(res.status, 403);
    const body = await res.json();
    assert.equal(body.code, 403);
    assert.equal(body.sandboxId, sbx.sandboxId);
  }

  step("a public sandbox's port needs nothing");
  await pub.commands.run("mkdir -p www && echo public > www/index.html");
  await pub.commands.run("python3 -m http.server 8000 --directory www", { background: true });
  await until("the public web server", async () => (res = await get(`https://${pub.getHost(8000)}/index.html`)).status === 200);
  assert.equal(await res.text(), "public\n");
} finally {
  await pub.kill().catch(() => {});
  await sbx.kill().catch(() => {});
}
step("a killed sandbox's host is 404");
const gone = await get(`https://${sbx.getHost(8000)}/`);
assert.equal(gone.status, 404);
console.log("ok");
