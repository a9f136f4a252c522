// The official TypeScript SDK client's OAuth against agent-task, driven by a test.
//
// argv[2]: the MCP endpoint URL. MCP_SDK_DIR: where @modelcontextprotocol/sdk is installed.
// Each time the SDK sends the person to the authorization server it prints
// {"event":"authorize","url":...} and waits for one line on stdin: the URL the person's
// browser was sent back to (with code, state and iss). At the end it prints
// {"event":"result",...}: what the calls answered, whether the refresh rotated the refresh
// token, the revocation's status and the status of a request made after it.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const sdk = process.env.MCP_SDK_DIR;
const load = (path) => import(pathToFileURL(`${sdk}/dist/esm/${path}`).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { UnauthorizedError } = await load("client/auth.js");

const server = new URL(process.argv[2]);
const REDIRECT = "http://127.0.0.1:47124/callback";
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const emit = (value) => process.stdout.write(JSON.stringify(value) + "\n");

const stored = { client: undefined, tokens: undefined, verifier: undefined, callback: undefined };
let authorizations = 0;
const provider = {
  get redirectUrl() { return REDIRECT; },
  get clientMetadata() {
    return {
      client_name: "sdk-typescript-test",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_post",
    };
  },
  clientInformation() { return stored.client; },
  saveClientInformation(info) { stored.client = info; },
  tokens() { return stored.tokens; },
  saveTokens(tokens) { stored.tokens = tokens; },
  async redirectToAuthorization(url) {
    authorizations += 1;
    emit({ event: "authorize", url: url.toString() });
    stored.callback = (await lines.next()).value;
  },
  saveCodeVerifier(verifier) { stored.verifier = verifier; },
  codeVerifier() { return stored.verifier; },
};

async function connect() {
  const client = new Client({ name: "ts-oauth-test", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(server, { authProvider: provider }));
    return client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  const back = new URL(stored.callback);
  const code = back.searchParams.get("code");
  if (!code) throw new Error(`authorization refused: ${back.search}`);
  if (back.searchParams.get("iss") !== server.origin) throw new Error(`wrong iss: ${back.search}`);
  const transport = new StreamableHTTPClientTransport(server, { authProvider: provider });
  await transport.finishAuth(code);
  const client2 = new Client({ name: "ts-oauth-test", version: "1.0.0" });
  await client2.connect(new StreamableHTTPClientTransport(server, { authProvider: provider }));
  return client2;
}

const text = (result) => JSON.parse(result.content[0].text);

let client = await connect();
const tools = (await client.listTools()).tools.map((t) => t.name);
const who = text(await client.callTool({ name: "observe_whoami", arguments: {} }));
const created = text(await client.callTool({ name: "agenttask_create", arguments: { verb: "agent.run" } }));
await client.close();

// The access token stops working (as an expired one would): the SDK refreshes on the 401.
const spent = stored.tokens.refresh_token;
stored.tokens = { ...stored.tokens, access_token: "ato_0000000000000000_" + "0".repeat(64) };
const before = authorizations;
client = await connect();
const whoAfterRefresh = text(await client.callTool({ name: "observe_whoami", arguments: {} }));
await client.close();

// RFC 7009 revocation at the endpoint the metadata names, then a request with the token.
const metadata = await (await fetch(new URL("/.well-known/oauth-authorization-server", server))).json();
const revoked = await fetch(metadata.revocation_endpoint, {
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams({
    token: stored.tokens.refresh_token,
    token_type_hint: "refresh_token",
    client_id: stored.client.client_id,
    client_secret: stored.client.client_secret,
  }),
});
const after = await fetch(server, {
  method: "POST",
  headers: {
    authorization: `Bearer ${stored.tokens.access_token}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
});

emit({
  event: "result",
  tools,
  who,
  created,
  whoAfterRefresh,
  refreshed: stored.tokens.refresh_token !== spent,
  refreshNeededNoAuthorization: authorizations === before,
  registered: Boolean(stored.client.client_secret),
  revokeStatus: revoked.status,
  afterStatus: after.status,
  challenge: after.headers.get("www-authenticate"),
});
process.exit(0);
