// Drives an RPC host (Pi itself, or caddie through caddie_rpc_shim.mjs) with Pi's own RpcClient through
// one fixed script, and prints what the host answered: every command's result (or error) and every event,
// in order, as one JSON document. tests/interop/test_pi_rpc_client.py runs it against both and compares.
//
//   node rpc_drive.mjs <pi package dir> <cli path> <cwd> [extra args...]
import { pathToFileURL } from "node:url";
import path from "node:path";

const [piDir, cliPath, cwd, ...extraArgs] = process.argv.slice(2);
const { RpcClient } = await import(pathToFileURL(path.join(piDir, "dist/modes/rpc/rpc-client.js")).href);

const client = new RpcClient({ cliPath, cwd, args: ["--model", "fake/fake-model", ...extraArgs] });
const log = [];
let current = "start";
client.onEvent((event) => {
  log.push({ during: current, event });
  if (event.type === "extension_ui_request") answerDialog(event);
});

function answerDialog(request) {
  const reply = (body) =>
    client.process.stdin.write(JSON.stringify({ type: "extension_ui_response", id: request.id, ...body }) + "\n");
  if (request.method === "confirm") reply({ confirmed: true });
  else if (request.method === "select") reply({ value: request.options[1] });
  else if (request.method === "input") reply({ value: "Ada" });
  else if (request.method === "editor") reply({ cancelled: true });
}

async function step(name, fn) {
  current = name;
  try {
    const result = await fn();
    log.push({ step: name, result: result === undefined ? "<undefined>" : result });
  } catch (error) {
    log.push({ step: name, error: String(error.message).split(". Stderr:")[0] });
  }
}

const idle = () => client.waitForIdle(30000);
const waitFor = (type) =>
  new Promise((resolve) => {
    const off = client.onEvent((event) => {
      if (event.type === type) {
        off();
        resolve(event);
      }
    });
  });

await client.start();
try {
  await step("get_state", () => client.getState());
  await step("get_available_models", () => client.getAvailableModels());
  await step("get_available_thinking_levels", () => client.getAvailableThinkingLevels());
  await step("cycle_thinking_level", () => client.cycleThinkingLevel());
  await step("get_commands", () => client.getCommands());
  await step("prompt", async () => {
    const settled = idle();
    await client.prompt("hello there");
    await settled;
  });
  await step("get_last_assistant_text", () => client.getLastAssistantText());
  await step("second_prompt_while_busy", async () => {
    const settled = idle();
    const started = waitFor("message_update");
    await client.prompt("run the tool");
    await started;
    let refused;
    try {
      await client.prompt("and this at once");
    } catch (error) {
      refused = String(error.message);
    }
    await client.steer("steer: use care");
    await client.followUp("follow up: then summarise");
    await settled;
    return { refused };
  });
  await step("get_messages", () => client.getMessages());
  await step("dialogs", async () => {
    await client.prompt("/ask");
    return "answered";
  });
  await step("bash", () => client.bash("printf 'one\\ntwo\\n'"));
  await step("set_session_name_blank", () => client.setSessionName("  "));
  await step("set_session_name", () => client.setSessionName("demo run"));
  await step("get_session_stats", () => client.getSessionStats());
  await step("compact", () => client.compact());
  await step("get_session_stats_after_compact", () => client.getSessionStats());
  await step("set_model", () => client.setModel("fake", "fake-model-2"));
  await step("set_model_unknown", () => client.setModel("fake", "nope"));
  await step("set_model_reasoner", () => client.setModel("fake", "fake-reasoner"));
  await step("reasoner_levels", () => client.getAvailableThinkingLevels());
  await step("set_thinking_level_high", () => client.setThinkingLevel("high"));
  await step("cycle_thinking_level_reasoner", () => client.cycleThinkingLevel());
  await step("set_model_back", () => client.setModel("fake", "fake-model-2"));
  await step("cycle_model", () => client.cycleModel());
  await step("set_thinking_level", () => client.setThinkingLevel("high"));
  await step("set_steering_mode", () => client.setSteeringMode("all"));
  await step("set_follow_up_mode", () => client.setFollowUpMode("all"));
  await step("set_auto_compaction", () => client.setAutoCompaction(false));
  await step("set_auto_retry", () => client.setAutoRetry(false));
  await step("abort_retry", () => client.abortRetry());
  await step("abort_bash", () => client.abortBash());
  await step("get_state_after", () => client.getState());
  await step("get_fork_messages", () => client.getForkMessages());
  await step("get_entries_bad_cursor", () => client.getEntries("no-such-entry"));
  await step("get_tree", () => client.getTree());
  await step("fork", async () => {
    const [first] = await client.getForkMessages();
    return client.fork(first.entryId);
  });
  await step("get_messages_after_fork", () => client.getMessages());
  await step("clone", () => client.clone());
  await step("new_session", () => client.newSession());
  await step("get_state_new", () => client.getState());
  await step("switch_session", async () => {
    const [first] = log.filter((r) => r.step === "get_state").map((r) => r.result.sessionFile);
    return client.switchSession(first);
  });
  await step("get_messages_switched", () => client.getMessages());
  await step("get_entries", async () => {
    const { entries, leafId } = await client.getEntries();
    const tail = await client.getEntries(entries[entries.length - 2].id);
    return { count: entries.length, leafIsLast: leafId === entries[entries.length - 1].id, tail };
  });
  await step("abort_running", async () => {
    const settled = idle();
    const streaming = waitFor("message_update");
    await client.prompt("write slowly");
    await streaming;
    await client.abort();
    await settled;
    return client.getLastAssistantText();
  });
  await step("abort", () => client.abort());
  await step("clear_queue", () => client.clearQueue());
} finally {
  current = "stop";
  await client.stop();
}
process.stdout.write(JSON.stringify(log));
