// Times pi-mulligan's own context filter on a JSON written by bench_mulligan_filter.py (run by it).
//
//   node --expose-gc mulligan_original_filter.mjs <pi-mulligan src dir> <data.json> <out.json> \
//        <budget seconds> <min runs> <max runs>
//
// <pi-mulligan src dir> is a temporary export of pi-mulligan's tree (nothing of it is kept in this
// repository). Its TypeScript is loaded the way Pi loads extensions: with jiti (from $CADDIE_PI_DIR, default
// .cache/pi), Pi's own modules aliased for its imports of typebox and @earendil-works/pi-coding-agent.
//
// Measured, each on a fresh structuredClone of the messages (made outside the timed region, as Pi hands the
// `context` event a deep copy): `filterPipeline(messages, readMarkers(...), config, branch)` and the whole
// `contextHandler(pi, event, ctx)` over a fake session manager shaped like Pi's (getEntries() filters the
// entries, getBranch() walks parent ids from the leaf). Warm-up, then as many runs as fit in the budget
// (within [min, max]). Writes the samples (ms) and the filtered messages of one run to <out.json>.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [src, dataPath, outPath, budgetArg, minArg, maxArg] = process.argv.slice(2);
const budget = Number(budgetArg ?? 3);
const minRuns = Number(minArg ?? 5);
const maxRuns = Number(maxArg ?? 300);

const piDir = process.env.CADDIE_PI_DIR ?? new URL("../.cache/pi", import.meta.url).pathname;
const piPackage = join(piDir, "node_modules", "@earendil-works", "pi-coding-agent");
const requirePi = createRequire(join(piPackage, "package.json"));
const { createJiti } = await import(pathToFileURL(requirePi.resolve("jiti")).href);
const jiti = createJiti(import.meta.url, {
  fsCache: false,
  alias: {
    "@earendil-works/pi-coding-agent": join(piPackage, "dist", "index.js"),
    typebox: requirePi.resolve("typebox"),
  },
});
const transforms = await jiti.import(join(src, "transforms.ts"));
const filter = await jiti.import(join(src, "filter.ts"));
const config = await jiti.import(join(src, "config.ts"));

const data = JSON.parse(readFileSync(dataPath, "utf8"));
config.setConfig(data.settings);
const cfg = config.getConfig();

// Pure pipeline inputs: the markers as readMarkers reads them from the stored entries.
const bundle = filter.readMarkers({ sessionManager: { getEntries: () => data.markers } });
const markers = { rewinds: bundle.rewinds, shrinks: bundle.shrinks };

// Whole handler: a session manager shaped like Pi's (SessionManager.getEntries / getBranch).
const fileEntries = data.branch;
const byId = new Map(fileEntries.map((e) => [e.id, e]));
const leafId = fileEntries[fileEntries.length - 1].id;
const sessionManager = {
  getSessionId: () => "bench-session",
  getLeafId: () => leafId,
  getEntries: () => fileEntries.filter((e) => e.type !== "session"),
  getBranch(fromId) {
    const path = [];
    let current = byId.get(fromId ?? leafId);
    while (current) {
      path.push(current);
      current = current.parentId ? byId.get(current.parentId) : undefined;
    }
    path.reverse();
    return path;
  },
  getLabel: () => undefined,
};
let appended = 0;
const pi = { appendEntry: () => { appended++; } };
const ctx = {
  sessionManager,
  hasUI: true,
  ui: { setWidget() {}, notify() {}, setStatus() {} },
  getContextUsage: () => ({ tokens: null, contextWindow: data.contextWindow, percent: null }),
};

function timedRuns(fn, makeInput) {
  const warm = [];
  const start = performance.now();
  while (warm.length < 2 || (performance.now() - start < 300 && warm.length < 50)) {
    const arg = makeInput();
    const t0 = performance.now();
    fn(arg);
    warm.push(performance.now() - t0);
  }
  const runs = Math.max(minRuns, Math.min(maxRuns, Math.ceil((budget * 1000) / Math.max(median(warm), 1e-3))));
  globalThis.gc?.();
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const arg = makeInput();
    const t0 = performance.now();
    fn(arg);
    samples.push(performance.now() - t0);
  }
  return samples;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const copies = () => structuredClone(data.messages);
const pipelineOutput = transforms.filterPipeline(copies(), markers, cfg, data.branch);
const fired = filter.contextHandler(pi, { type: "context", messages: copies() }, ctx);
const handlerOutput = fired?.messages ?? null;

const pipelineSamples = timedRuns((msgs) => transforms.filterPipeline(msgs, markers, cfg, data.branch), copies);
const handlerSamples = timedRuns((msgs) => filter.contextHandler(pi, { type: "context", messages: msgs }, ctx), copies);

writeFileSync(
  outPath,
  JSON.stringify({
    node: process.version,
    markers: { rewinds: markers.rewinds.length, shrinks: markers.shrinks.length },
    filterPipeline: { samples: pipelineSamples, median: median(pipelineSamples), output: pipelineOutput },
    contextHandler: {
      samples: handlerSamples,
      median: median(handlerSamples),
      output: handlerOutput,
      appendEntry: appended,
    },
  }),
);
