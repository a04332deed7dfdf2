// Drives the reference Pi's own SessionManager, for interop tests (never vendored: Pi is found at run time).
//   node pi_session.mjs make <dir> <cwd>   writes Pi sessions (tool calls, custom entries, labels,
//                                          a compaction, two branches) and prints their paths as JSON
//   node pi_session.mjs context <file>     opens a session with Pi's loader and prints what Pi builds
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const piDir = process.env.CADDIE_PI_DIR ?? new URL("../../.cache/pi", import.meta.url).pathname;
const pi = await import(
  pathToFileURL(join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist/index.js")).href
);
const { SessionManager } = pi;

const usage = (input, output) => ({
  input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});
let clock = Date.parse("2026-11-02T10:00:00.000Z");
const t = () => (clock += 1000);
const user = (text) => ({ role: "user", content: text, timestamp: t() });
const assistant = (content, stopReason = "stop", extra = {}) => ({
  role: "assistant", content, api: "openai-completions", provider: "openai", model: "gpt-4.1",
  usage: usage(100, 20), stopReason, timestamp: t(), ...extra,
});
const toolResult = (id, name, text, isError = false) => ({
  role: "toolResult", toolCallId: id, toolName: name, content: [{ type: "text", text }],
  details: { note: "details are never sent" }, isError, timestamp: t(),
});

function make(dir, cwd) {
  const out = {};

  // 1. A linear session with tool calls, custom state, an injected message, a label and a name.
  let sm = SessionManager.create(cwd, dir);
  sm.appendModelChange("openai", "gpt-4.1");
  sm.appendThinkingLevelChange("high");
  sm.appendMessage(user("List the files and read README.md"));
  sm.appendMessage(assistant([
    { type: "thinking", thinking: "I should look around.", thinkingSignature: "sig-1" },
    { type: "text", text: "Looking." },
    { type: "toolCall", id: "call_1", name: "bash", arguments: { command: "ls" } },
    { type: "toolCall", id: "call_2", name: "read", arguments: { path: "README.md" } },
  ], "toolUse"));
  sm.appendMessage(toolResult("call_1", "bash", "README.md\nsrc\n"));
  sm.appendMessage(toolResult("call_2", "read", "# Project\n"));
  sm.appendCustomEntry("mulligan:turn-metric", { schema: "pi-mulligan", v: 1, deltaTokens: null, turnIndex: 0 });
  sm.appendCustomMessageEntry("goal:continue", "Keep going.", false, { ephemeral: false });
  const answer = sm.appendMessage(assistant([{ type: "text", text: "It is a project." }]));
  sm.appendLabelChange(answer, "checkpoint-a");
  sm.appendSessionInfo("Linear demo");
  sm.appendMessage({ role: "bashExecution", command: "git status", output: "clean", exitCode: 0,
    cancelled: false, truncated: false, timestamp: t() });
  out.linear = sm.getSessionFile();

  // 2. A session with a compaction and two branches.
  sm = SessionManager.create(cwd, dir);
  sm.appendMessage(user("first task"));
  sm.appendMessage(assistant([{ type: "text", text: "done with first" }]));
  const keep = sm.appendMessage(user("second task"));
  sm.appendMessage(assistant([{ type: "toolCall", id: "c3", name: "read", arguments: { path: "a.txt" } }], "toolUse"));
  sm.appendMessage(toolResult("c3", "read", "alpha"));
  sm.appendMessage(assistant([{ type: "text", text: "a.txt says alpha" }]));
  sm.appendCompaction("## Goal\nDo the tasks.", keep, 1234, { readFiles: ["a.txt"], modifiedFiles: [] });
  const fork = sm.appendMessage(user("third task"));
  sm.appendMessage(assistant([{ type: "text", text: "branch one answer" }]));
  sm.appendLabelChange(fork, "fork-point");
  sm.branch(fork);
  sm.appendMessage(assistant([{ type: "text", text: "branch two answer" }]));
  sm.branchWithSummary(fork, "Tried branch two; it was fine.", { readFiles: [], modifiedFiles: [] });
  sm.appendMessage(user("after summary"));
  sm.appendMessage(assistant([{ type: "text", text: "final" }]));
  out.branched = sm.getSessionFile();
  console.log(JSON.stringify(out));
}

function context(file) {
  const sm = SessionManager.open(file);
  const labels = {};
  for (const e of sm.getEntries()) {
    const l = sm.getLabel(e.id);
    if (l) labels[e.id] = l;
  }
  const ctx = sm.buildSessionContext();
  console.log(JSON.stringify({
    sessionId: sm.getSessionId(),
    leafId: sm.getLeafId(),
    entryCount: sm.getEntries().length,
    branch: sm.getBranch().map((e) => e.id),
    contextEntries: sm.buildContextEntries().map((e) => e.id),
    labels,
    name: sm.getSessionName() ?? null,
    thinkingLevel: ctx.thinkingLevel,
    model: ctx.model,
    messages: ctx.messages,
  }));
}

const [cmd, a, b] = process.argv.slice(2);
if (cmd === "make") make(a, b);
else if (cmd === "context") context(a);
else {
  console.error("usage: pi_session.mjs make <dir> <cwd> | context <file>");
  process.exit(2);
}
