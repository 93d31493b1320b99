// The quick start of README.md, which shows the lines between the markers
// exactly; readme.test.ts runs it and checks that the two agree.
// quickstart:begin
import { Airlock } from "@airlockhq/sdk";

const airlock = new Airlock(); // reads AIRLOCK_URL and AIRLOCK_API_KEY, or pass { url, apiKey }
const sandbox = await airlock.sandboxes.create({ timeout_s: 600 });
try {
  const { stdout } = await sandbox.exec("echo hello from $(hostname)");
  console.log(stdout.trim());

  await sandbox.files.write("hello.py", 'print("hi from python")');
  const run = await sandbox.execStream(["python3", "hello.py"]);
  for await (const { stream, data } of run) console.log(stream, new TextDecoder().decode(data).trim());
  console.log("exit", run.exit?.exit_code);
} finally {
  await sandbox.delete();
}
// quickstart:end
