// What the SDK's tests share: a client of the server under test (from
// AIRLOCK_URL and AIRLOCK_API_KEY, which e2e/sdkts_test.go sets to a real
// `airlock serve` and its admin key), and sandboxes that are destroyed
// however a test ends.
import { after } from "node:test";
import { Airlock, type Sandbox, type schema } from "@airlockhq/sdk";

if (!process.env.AIRLOCK_URL || !process.env.AIRLOCK_API_KEY) {
  throw new Error("set AIRLOCK_URL and AIRLOCK_API_KEY to a running airlock serve and an admin key (e2e/sdkts_test.go does)");
}

/** The client every test uses: it reads AIRLOCK_URL and AIRLOCK_API_KEY itself. */
export const airlock = new Airlock();

const made: Sandbox[] = [];
after(async () => {
  await Promise.all(made.map((sb) => sb.delete().catch(() => {})));
});

/** sandbox creates a sandbox of this suite, destroyed when the file's tests end. */
export async function sandbox(req: schema.CreateSandbox = {}, client: Airlock = airlock): Promise<Sandbox> {
  const sb = await client.sandboxes.create({ timeout_s: 300, ...req, metadata: { suite: "sdkts", ...req.metadata } });
  made.push(sb);
  return sb;
}

/** text reads a byte stream to its end as UTF-8. */
export async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

/** collect reads an async iterable into an array. */
export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of it) out.push(v);
  return out;
}

/** decode joins byte chunks as UTF-8. */
export function decode(chunks: Uint8Array[]): string {
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** until polls fn until it returns a value, for up to ms. */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
