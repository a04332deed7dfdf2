// Sends one request with the reference Pi's own pi-ai API module, for request-body parity tests (Pi is
// found at run time, never vendored). Reads {api, model, context, options} as JSON on stdin; the model's
// baseUrl points at the test's fake server, which records the request. Prints the final stop reason (and
// the final message's content).
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const piDir = process.env.CADDIE_PI_DIR ?? new URL("../../.cache/pi", import.meta.url).pathname;
let input = "";
for await (const chunk of process.stdin) input += chunk;
const { api, model, context, options } = JSON.parse(input);
const module = await import(
  pathToFileURL(join(piDir, `node_modules/@earendil-works/pi-ai/dist/api/${api}.js`)).href
);
let last;
for await (const event of module.streamSimple(model, context, options)) last = event;
process.stdout.write(JSON.stringify({
  type: last?.type,
  reason: last?.reason ?? last?.message?.stopReason,
  error: last?.error?.errorMessage,
  content: (last?.message ?? last?.error)?.content,
}));
