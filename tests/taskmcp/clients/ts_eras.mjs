// One session of the official TypeScript SDK client against our MCP endpoint, in one era.
//
//   node ts_eras.mjs ERA URL TOKEN
//
// ERA "2025-11-25": @modelcontextprotocol/sdk 1.x (initialize handshake), from $MCP_SDK_DIR.
// ERA "2026-07-28": @modelcontextprotocol/client 2.x pinned to the 2026-07-28 revision
// (server/discover, per-request _meta), from $MCP_CLIENT_DIR.
// Prints one JSON line: the negotiated version, the tools listed, a call's result, a refusal.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [era, url, token] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };

async function load(dir, file) {
  return import(pathToFileURL(path.join(dir, file)).href);
}

let client;
let transport;
if (era === "2025-11-25") {
  const dir = process.env.MCP_SDK_DIR;
  const { Client } = await load(dir, "dist/esm/client/index.js");
  const { StreamableHTTPClientTransport } = await load(dir, "dist/esm/client/streamableHttp.js");
  client = new Client({ name: "ts-sdk-1", version: "1.0.0" });
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
} else {
  const dir = process.env.MCP_CLIENT_DIR;
  const { Client, StreamableHTTPClientTransport } = await load(dir, "dist/index.mjs");
  client = new Client(
    { name: "ts-client-2", version: "2.0.0" },
    { versionNegotiation: { mode: { pin: era } } },
  );
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
}
const listed = await client.listTools();
const who = await client.callTool({ name: "observe_whoami", arguments: {} });
const refused = await client.callTool({ name: "agenttask_get", arguments: { taskId: 5 } });
console.log(
  JSON.stringify({
    protocolVersion: client.protocolVersion ?? transport.protocolVersion ?? null,
    tools: listed.tools.map((t) => t.name),
    who: who.structuredContent ?? JSON.parse(who.content[0].text),
    refused: { isError: refused.isError === true, body: JSON.parse(refused.content[0].text) },
  }),
);
await client.close();
