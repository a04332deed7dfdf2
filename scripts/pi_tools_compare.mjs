// Runs Pi's own built-in tools on a list of calls, the way Pi's agent loop does, and prints the results.
//
// Used by tests/tools/test_pi_parity.py to compare caddie's tools with Pi's byte for byte.
// Input (stdin, JSON): { "piDir", "definitions": true } prints the tool definitions instead; otherwise { "piDir": "/work/piref", "calls": [ { "id", "cwd", "tool", "args",
//   "ctx"?: { "modelInput"?: [...], "session"?: { "id", "file", "provider", "model", "thinkingLevel" } },
//   "abortAfterMs"?: number, "options"?: { "shellPath"?, "commandPrefix"? } } ] }
//   A call may instead be { "id", "validate": { "name", "schema", "args" } }: the JSON schema is rebuilt
//   with TypeBox builders (as a Pi extension would write it) and only validateToolArguments runs.
// Output (stdout, JSON): [ { "id", "isError", "content": [ {type:"text", text} | {type:"image", mimeType} ],
//   "details" } ]   -- calls run one after another, in order.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const input = JSON.parse(readFileSync(0, "utf-8"));
const base = join(input.piDir, "node_modules", "@earendil-works");
const tools = await import(pathToFileURL(join(base, "pi-coding-agent", "dist", "core", "tools", "index.js")).href);
const validation = await import(pathToFileURL(join(base, "pi-ai", "dist", "utils", "validation.js")).href);
const { Type } = await import(pathToFileURL(join(input.piDir, "node_modules", "typebox", "build", "index.mjs")).href);

// Rebuild a plain JSON schema with TypeBox builders so it carries TypeBox's kinds (used by Value.Convert).
function toTypeBox(schema) {
  if (typeof schema !== "object" || schema === null) return schema;
  const { type, properties, required, items, anyOf, const: constValue, ...rest } = schema;
  if (anyOf) return Type.Union(anyOf.map(toTypeBox), rest);
  if (constValue !== undefined) return Type.Literal(constValue, rest);
  if (schema.enum) return Type.Unsafe(schema);
  switch (type) {
    case "object": {
      const req = new Set(required ?? []);
      const props = {};
      for (const [key, value] of Object.entries(properties ?? {})) {
        props[key] = req.has(key) ? toTypeBox(value) : Type.Optional(toTypeBox(value));
      }
      return Type.Object(props, rest);
    }
    case "array":
      return Type.Array(toTypeBox(items), rest);
    case "string":
      return Type.String(rest);
    case "number":
      return Type.Number(rest);
    case "integer":
      return Type.Integer(rest);
    case "boolean":
      return Type.Boolean(rest);
    case "null":
      return Type.Null(rest);
    default:
      return Type.Unsafe(schema);
  }
}

function runValidate(call) {
  const tool = { name: call.validate.name, parameters: toTypeBox(call.validate.schema) };
  const rebuilt = JSON.stringify(tool.parameters) === JSON.stringify(call.validate.schema);
  try {
    const value = validation.validateToolArguments(tool, { type: "toolCall", id: call.id, name: tool.name, arguments: call.validate.args });
    return { isError: false, content: [{ type: "text", text: JSON.stringify(value) }], details: { rebuilt } };
  } catch (error) {
    return { isError: true, content: [{ type: "text", text: error.message }], details: { rebuilt } };
  }
}

function makeCtx(spec) {
  if (!spec) return undefined;
  const ctx = {};
  if (spec.modelInput) ctx.model = { input: spec.modelInput, provider: "p", id: "m" };
  if (spec.session) {
    ctx.sessionManager = {
      getSessionId: () => spec.session.id,
      getSessionFile: () => spec.session.file,
    };
    ctx.model = { input: ["text"], provider: spec.session.provider, id: spec.session.model };
    if (spec.session.thinkingLevel) ctx.thinkingLevel = spec.session.thinkingLevel;
  }
  return ctx;
}

async function runCall(call) {
  if (call.validate) return runValidate(call);
  const options = call.options ?? {};
  const defs = tools.createAllToolDefinitions(call.cwd, {
    bash: { shellPath: options.shellPath, commandPrefix: options.commandPrefix },
  });
  const tool = defs[call.tool];
  if (!tool || call.tool === "powershell") {
    return { isError: true, content: [{ type: "text", text: `Tool ${call.tool} not found` }], details: {} };
  }
  const controller = new AbortController();
  let timer;
  if (call.abortAfterMs !== undefined) timer = setTimeout(() => controller.abort(), call.abortAfterMs);
  try {
    const toolCall = { type: "toolCall", id: call.id, name: call.tool, arguments: call.args };
    const prepared = tool.prepareArguments ? tool.prepareArguments(toolCall.arguments) : toolCall.arguments;
    const args = validation.validateToolArguments(tool, { ...toolCall, arguments: prepared });
    const result = await tool.execute(call.id, args, controller.signal, () => {}, makeCtx(call.ctx));
    return { isError: false, content: result.content, details: result.details ?? null };
  } catch (error) {
    return { isError: true, content: [{ type: "text", text: error instanceof Error ? error.message : String(error) }], details: {} };
  } finally {
    if (timer) clearTimeout(timer);
  }
}

if (input.definitions) {
  // The tool definitions themselves: what the model sees in the tool list and the system prompt.
  const defs = tools.createAllToolDefinitions(process.cwd());
  const out = {};
  for (const [name, def] of Object.entries(defs)) {
    out[name] = {
      name: def.name,
      label: def.label,
      description: def.description,
      parameters: JSON.parse(JSON.stringify(def.parameters)),
      promptSnippet: def.promptSnippet ?? null,
      promptGuidelines: def.promptGuidelines ?? [],
      hasPrepareArguments: typeof def.prepareArguments === "function",
      executionMode: def.executionMode ?? null,
    };
  }
  process.stdout.write(JSON.stringify(out), () => process.exit(0));
} else {
  const results = [];
  for (const call of input.calls) {
    const result = await runCall(call);
    results.push({
      id: call.id,
      isError: result.isError,
      content: result.content.map((c) => (c.type === "image" ? { type: "image", mimeType: c.mimeType } : c)),
      details: result.details,
    });
  }
  // Exit once the output is flushed (stray timers or child processes must not keep us alive).
  process.stdout.write(JSON.stringify(results), () => process.exit(0));
}
