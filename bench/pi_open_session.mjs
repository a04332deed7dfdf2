// Times the reference Pi opening a session file and building its context (run by bench_session_open.py).
import { pathToFileURL } from "node:url";
import { join } from "node:path";
const pi = await import(pathToFileURL(join(process.env.CADDIE_PI_DIR ?? new URL("../.cache/pi", import.meta.url).pathname,
  "node_modules/@earendil-works/pi-coding-agent/dist/index.js")).href);
const t0 = performance.now();
const sm = pi.SessionManager.open(process.argv[2]);
const ctx = sm.buildSessionContext();
const t1 = performance.now();
console.log(JSON.stringify({ seconds: (t1 - t0) / 1000, messages: ctx.messages.length,
  rssMB: process.resourceUsage().maxRSS / 1024 }));
