// Reads a JSON array of strings on stdin and prints, for each, what
// parseGoDuration makes of it: {"ns": "<nanoseconds>"} or {"err": "..."}.
// internal/console's Go test compares that with time.ParseDuration.
import { parseGoDuration } from '../src/duration.js';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const out = JSON.parse(input).map((s) => {
  try {
    return { ns: parseGoDuration(s).toString() };
  } catch (e) {
    return { err: e.message };
  }
});
process.stdout.write(JSON.stringify(out));
