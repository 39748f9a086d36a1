// A loopback stand-in for a host's model API, so that a host calls one
// MCP tool without a model account: the first answer of each conversation
// asks for the tool whose name ends in the NAME of "call the tool named
// NAME" in the conversation (else TOOL, default "whoami"), with no
// arguments; once the conversation holds the tool's result, the answer
// repeats it as text.
// It speaks OpenAI Chat Completions (/v1/chat/completions, Copilot CLI's
// BYOK), OpenAI Responses (/v1/responses, Codex), Anthropic Messages
// (/v1/messages, Claude Code) and Gemini's generateContent
// (/v1beta/models/MODEL:generateContent, :streamGenerateContent, Gemini
// CLI), streamed or not. Usage:
//   node model.mjs ADDR_FILE LOG_FILE [TOOL]
// It listens on 127.0.0.1:0, writes HOST:PORT to ADDR_FILE, and appends
// one line per request (the API, and "tool" or "text") to LOG_FILE; for
// Chat Completions, the opening of a tool's result too.
import http from "node:http";
import fs from "node:fs";

const [addrFile, logFile, suffix = "whoami"] = process.argv.slice(2);
const log = (line) => fs.appendFileSync(logFile, line + "\n");

// wanted is the tool a conversation asks for.
const wanted = (body) => JSON.stringify(body).match(/call the tool named ([A-Za-z0-9_-]+)/)?.[1] || suffix;

// toolNamed finds the offered tool whose name is want, or ends in
// "__" + want, "-" + want or "_" + want (an MCP server's tool, prefixed
// with the server's name: Claude Code and Codex use "__", Copilot CLI "-",
// Gemini CLI "_").
// Codex writes the tool's hyphens as underscores.
const toolNamed = (names, want) =>
  [want, want.replaceAll("-", "_")].map((w) => names.find((n) => n === w || ["__", "-", "_"].some((sep) => n.endsWith(sep + w)))).find(Boolean);

function sse(res, events) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [event, data] of events) {
    if (event) res.write(`event: ${event}\n`);
    res.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
  }
  res.end();
}

function chat(req, res, body) {
  const names = (body.tools || []).map((t) => t.function?.name).filter(Boolean);
  const result = (body.messages || []).find((m) => m.role === "tool");
  const want = wanted(body);
  const tool = toolNamed(names, want);
  const id = "chatcmpl-1", created = Math.floor(Date.now() / 1000), model = body.model || "stand-in";
  let message, finish;
  if (!result && tool) {
    log(`chat tool ${tool}`);
    message = { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: tool, arguments: "{}" } }] };
    finish = "tool_calls";
  } else {
    const text = result ? `The tool answered: ${typeof result.content === "string" ? result.content : JSON.stringify(result.content)}` : `no tool named ${want} among: ${names.join(", ")}`;
    // The result's opening (whoami's names no token) says what the tool did.
    log(`chat text ${result ? `result ${text.slice(19, 219).replace(/\s+/g, " ")}` : "no-tool"}`);
    message = { role: "assistant", content: text };
    finish = "stop";
  }
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  if (!body.stream) {
    return json(res, { id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: finish }], usage });
  }
  const delta = message.tool_calls
    ? { role: "assistant", tool_calls: message.tool_calls.map((c, index) => ({ index, ...c })) }
    : { role: "assistant", content: message.content };
  sse(res, [
    [null, { id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: null }] }],
    [null, { id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta: {}, finish_reason: finish }], usage }],
    [null, "[DONE]"],
  ]);
}

function responses(req, res, body) {
  // Codex groups an MCP server's tools in a namespace tool
  // (mcp__SERVER), whose function calls name the namespace.
  const offered = (body.tools || []).flatMap((t) =>
    t.type === "namespace" ? (t.tools || []).map((f) => ({ name: f.name, namespace: t.name, full: `${t.name}__${f.name}` })) : [{ name: t.name, full: t.name }]);
  const names = offered.map((t) => t.full).filter(Boolean);
  const input = Array.isArray(body.input) ? body.input : [];
  const result = input.find((i) => i.type === "function_call_output");
  const want = wanted(body);
  const tool = toolNamed(names, want);
  const chosen = offered.find((t) => t.full === tool);
  const model = body.model || "stand-in";
  let item;
  if (!result && tool) {
    log(`responses tool ${tool}`);
    item = { type: "function_call", id: "fc_1", call_id: "call_1", name: chosen.name, arguments: "{}", status: "completed" };
    if (chosen.namespace) item.namespace = chosen.namespace;
  } else {
    log(`responses text ${result ? "result" : "no-tool"}`);
    const text = result ? `The tool answered: ${typeof result.output === "string" ? result.output : JSON.stringify(result.output)}` : `no tool named ${want} among: ${names.join(", ")}`;
    item = { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] };
  }
  const response = { id: "resp_1", object: "response", created_at: Math.floor(Date.now() / 1000), model, status: "completed", output: [item],
    usage: { input_tokens: 1, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 2 } };
  if (!body.stream) return json(res, response);
  sse(res, [
    ["response.created", { type: "response.created", response: { ...response, status: "in_progress", output: [] } }],
    ["response.output_item.added", { type: "response.output_item.added", output_index: 0, item }],
    ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item }],
    ["response.completed", { type: "response.completed", response }],
  ]);
}

function messages(req, res, body) {
  const names = (body.tools || []).map((t) => t.name).filter(Boolean);
  const results = (body.messages || []).flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((c) => c.type === "tool_result");
  const result = results.find((c) => c.tool_use_id === "toolu_1");
  const want = wanted(body);
  const tool = toolNamed(names, want);
  const model = body.model || "stand-in";
  let block, stop;
  if (!result && tool) {
    log(`messages tool ${tool}`);
    block = { type: "tool_use", id: "toolu_1", name: tool, input: {} };
    stop = "tool_use";
  } else if (!result && names.includes("WaitForMcpServers") && !results.some((c) => c.tool_use_id === "toolu_wait")) {
    // Claude Code offers this while its MCP servers still connect.
    log("messages wait");
    block = { type: "tool_use", id: "toolu_wait", name: "WaitForMcpServers", input: {} };
    stop = "tool_use";
  } else {
    log(`messages text ${result ? "result" : "no-tool"}`);
    const text = result ? `The tool answered: ${JSON.stringify(result.content)}` : `no tool named ${want} among: ${names.join(", ")}`;
    block = { type: "text", text };
    stop = "end_turn";
  }
  const usage = { input_tokens: 1, output_tokens: 1 };
  const msg = { id: "msg_1", type: "message", role: "assistant", model, content: [block], stop_reason: stop, stop_sequence: null, usage };
  if (!body.stream) return json(res, msg);
  const start = block.type === "tool_use" ? { ...block, input: {} } : { type: "text", text: "" };
  const delta = block.type === "tool_use" ? { type: "input_json_delta", partial_json: "{}" } : { type: "text_delta", text: block.text };
  sse(res, [
    ["message_start", { type: "message_start", message: { ...msg, content: [], stop_reason: null } }],
    ["content_block_start", { type: "content_block_start", index: 0, content_block: start }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } }],
    ["message_stop", { type: "message_stop" }],
  ]);
}

// fill makes a value that fits a JSON schema (OpenAPI's upper-case types
// too): every property of an object, an enum's first value.
const fill = (schema, depth = 0) => {
  if (!schema || depth > 8) return null;
  if (schema.enum) return schema.enum[0];
  switch (String(Array.isArray(schema.type) ? schema.type[0] : schema.type).toLowerCase()) {
    case "object": return Object.fromEntries(Object.entries(schema.properties || {}).map(([k, v]) => [k, fill(v, depth + 1)]));
    case "array": return [];
    case "string": return "stand-in";
    case "number": case "integer": return 1;
    case "boolean": return false;
    default: return null;
  }
};

function gemini(req, res, body, stream) {
  const declared = (body.tools || []).flatMap((t) => t.functionDeclarations || []);
  const names = declared.map((f) => f.name).filter(Boolean);
  const parts = (body.contents || []).flatMap((c) => c.parts || []);
  const result = parts.find((p) => p.functionResponse);
  const want = wanted(body);
  const tool = toolNamed(names, want);
  let part;
  if (!names.length) {
    // A request without tools is one of Gemini CLI's own side questions
    // (routing, next speaker, loop checks): JSON of the schema it asks for.
    log("gemini side");
    const config = body.generationConfig || {};
    part = { text: JSON.stringify(fill(config.responseJsonSchema || config.responseSchema) ?? {}) };
  } else if (!result && tool) {
    log(`gemini tool ${tool}`);
    part = { functionCall: { name: tool, args: {} } };
  } else {
    log(`gemini text ${result ? "result" : "no-tool"}`);
    part = { text: result ? `The tool answered: ${JSON.stringify(result.functionResponse.response)}` : `no tool named ${want} among: ${names.join(", ")}` };
  }
  const answer = { candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 }, modelVersion: "stand-in" };
  if (!stream) return json(res, answer);
  sse(res, [[null, answer]]);
}

function json(res, v) {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(v));
}

const server = http.createServer((req, res) => {
  let data = "";
  req.on("data", (c) => { data += c; if (data.length > 8 << 20) req.destroy(); });
  req.on("end", () => {
    const path = new URL(req.url, "http://x").pathname;
    let body = {};
    try { body = data ? JSON.parse(data) : {}; } catch { /* not JSON */ }
    if (req.method === "POST" && path.endsWith("/chat/completions")) return chat(req, res, body);
    if (req.method === "POST" && path.endsWith("/responses")) return responses(req, res, body);
    if (req.method === "POST" && path.endsWith("/messages") && !path.endsWith("count_tokens")) return messages(req, res, body);
    if (req.method === "POST" && path.endsWith("/count_tokens")) return json(res, { input_tokens: 1 });
    if (req.method === "POST" && path.endsWith(":generateContent")) return gemini(req, res, body, false);
    if (req.method === "POST" && path.endsWith(":streamGenerateContent")) return gemini(req, res, body, true);
    if (req.method === "POST" && path.endsWith(":countTokens")) return json(res, { totalTokens: 1 });
    if (req.method === "GET" && path.endsWith("/models")) return json(res, { object: "list", data: [{ id: "stand-in", object: "model", created: 0, owned_by: "stand-in" }] });
    log(`other ${req.method} ${path}`);
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `not a model API path: ${path}` } }));
  });
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  fs.writeFileSync(addrFile + ".tmp", `127.0.0.1:${port}\n`);
  fs.renameSync(addrFile + ".tmp", addrFile);
});
for (const s of ["SIGINT", "SIGTERM"]) process.on(s, () => server.close(() => process.exit(0)));
