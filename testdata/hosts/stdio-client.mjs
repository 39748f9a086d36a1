// An MCP client on the TypeScript SDK for a stdio server (mcp-remote in
// front of serve): it starts COMMAND with this process's environment,
// lists the tools, calls TOOL with no arguments, and prints
//   tools: NAME NAME …
//   result: {…the tool's result as JSON…}
// on stdout; the server's stderr passes through. Exits 1 on any error.
// Usage: node stdio-client.mjs TOOL COMMAND [ARG…]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [tool, command, ...args] = process.argv.slice(2);
const client = new Client({ name: "agentauth-hosts-stdio-client", version: "1.0.0" });
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
// mcp-remote signs in before it answers initialize: allow for that.
const timeout = 120_000;
try {
  await client.connect(transport, { timeout });
  const { tools } = await client.listTools(undefined, { timeout });
  console.log(`tools: ${tools.map((t) => t.name).join(" ")}`);
  const result = await client.callTool({ name: tool, arguments: {} }, undefined, { timeout });
  console.log(`result: ${JSON.stringify(result)}`);
  await client.close();
} catch (err) {
  console.error(`stdio-client: ${err.message}`);
  process.exit(1);
}
