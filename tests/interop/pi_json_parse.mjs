// Runs the reference Pi's parseStreamingJson (pi-ai's streaming tool-argument parser) on each text of a JSON
// list read from stdin and prints the results as a JSON list (Pi is found at run time, never vendored).
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const piDir = process.env.CADDIE_PI_DIR ?? new URL("../../.cache/pi", import.meta.url).pathname;
const { parseStreamingJson } = await import(
  pathToFileURL(join(piDir, "node_modules/@earendil-works/pi-ai/dist/utils/json-parse.js")).href
);
let input = "";
for await (const chunk of process.stdin) input += chunk;
process.stdout.write(JSON.stringify(JSON.parse(input).map((text) => parseStreamingJson(text))));
