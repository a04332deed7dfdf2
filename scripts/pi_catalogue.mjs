// Prints, as JSON on stdout, the built-in provider table of an installed @earendil-works/pi-ai:
// per provider its id, display name, base URL, default headers, login label, the environment
// variables Pi reads its key from, and its models exactly as Pi ships them.
//
// Usage: node scripts/pi_catalogue.mjs <path to node_modules/@earendil-works/pi-ai>
// scripts/gen_catalogue.py runs this and turns the output into src/caddie/ai/catalogue.json.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = process.argv[2];
if (!root) {
  console.error("usage: node pi_catalogue.mjs <path to @earendil-works/pi-ai>");
  process.exit(2);
}
const load = (rel) => import(pathToFileURL(join(root, "dist", rel)).href);
const { builtinProviders } = await load("providers/all.js");
const { findEnvKeys } = await load("env-api-keys.js");
const version = JSON.parse(readFileSync(join(root, "package.json"), "utf-8")).version;

// findEnvKeys lists the variables that are set; an environment where every variable is set lists them all.
const everySet = new Proxy({}, { get: () => "set" });

const providers = builtinProviders().map((p) => ({
  id: p.id,
  name: p.name,
  baseUrl: p.baseUrl ?? null,
  headers: p.headers ?? null,
  loginLabel: p.auth?.apiKey?.name ?? null,
  envKeys: findEnvKeys(p.id, everySet) ?? [],
  models: p.getModels(),
}));
process.stdout.write(JSON.stringify({ package: "@earendil-works/pi-ai", version, providers }));
