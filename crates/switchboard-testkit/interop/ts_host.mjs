// An MCP host on the official TypeScript SDK's client (npm
// `@modelcontextprotocol/sdk`, pinned by scripts/install-interop.sh), for
// interop tests of switchboard's server side (`switchboard serve`).
//
// Usage:
//   node ts_host.mjs TOOL=JSON_ARGS [TOOL=JSON_ARGS …] -- COMMAND [ARGS…]
//   node ts_host.mjs TOOL=JSON_ARGS [TOOL=JSON_ARGS …] -- http://HOST:PORT/mcp
//
// Spawns COMMAND over stdio (with this process's environment), or connects
// to the URL over Streamable HTTP, lists its
// tools (every page), calls each TOOL with its arguments, and prints one
// JSON line: {"server": serverInfo, "protocol": version, "tools": [names],
// "calls": {TOOL: result}}. A failure prints {"error": message} and exits 1.
//
// With TS_HOST_OAUTH=REDIRECT_URI (HTTP only), the client logs in the SDK's
// way when the server answers 401: protected resource metadata, the
// authorization server's metadata, dynamic registration, PKCE; the
// authorization page is opened without a browser (an authorization server
// that approves at once, as the testkit's does), the code taken from its
// redirect, `finishAuth` called, and the client connected again.
//
// The SDK is loaded from the interop cache ($SWITCHBOARD_CACHE/npm, default
// <repo>/.cache/npm); the SDK 1.x speaks the session era only.

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const cache = process.env.SWITCHBOARD_CACHE || join(here, '..', '..', '..', '.cache');
const require = createRequire(join(cache, 'npm', 'package.json'));

const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { UnauthorizedError } = require('@modelcontextprotocol/sdk/client/auth.js');
const { randomBytes } = require('node:crypto');

const argv = process.argv.slice(2);
const split = argv.indexOf('--');
if (split < 0 || split === argv.length - 1) {
    console.log(JSON.stringify({ error: 'usage: ts_host.mjs TOOL=JSON … -- COMMAND [ARGS…]' }));
    process.exit(1);
}
const calls = argv.slice(0, split).map((spec) => {
    const at = spec.indexOf('=');
    return { name: spec.slice(0, at), args: JSON.parse(spec.slice(at + 1)) };
});
const [command, ...args] = argv.slice(split + 1);

// An OAuth client provider kept in memory; the "user" approves at once.
function memoryProvider(redirect) {
    const kept = { code: undefined };
    return {
        kept,
        get redirectUrl() { return redirect; },
        get clientMetadata() {
            return {
                client_name: 'ts-host',
                redirect_uris: [redirect],
                grant_types: ['authorization_code', 'refresh_token'],
                response_types: ['code'],
                token_endpoint_auth_method: 'none',
            };
        },
        state() { return randomBytes(16).toString('hex'); },
        clientInformation() { return kept.client; },
        saveClientInformation(info) { kept.client = info; },
        tokens() { return kept.tokens; },
        saveTokens(tokens) { kept.tokens = tokens; },
        saveCodeVerifier(verifier) { kept.verifier = verifier; },
        codeVerifier() { return kept.verifier; },
        async redirectToAuthorization(url) {
            const answer = await fetch(url, { redirect: 'manual' });
            const back = new URL(answer.headers.get('location'), url);
            kept.code = back.searchParams.get('code');
            if (!kept.code) throw new Error(`no code in the redirect: ${back}`);
        },
    };
}

const oauth = process.env.TS_HOST_OAUTH;
const http = /^https?:\/\//.test(command);
const provider = http && oauth ? memoryProvider(oauth) : undefined;
const connectTo = () => http
    ? new StreamableHTTPClientTransport(new URL(command), provider ? { authProvider: provider } : {})
    : new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
let transport = connectTo();
let client = new Client({ name: 'ts-host', version: '1.0.0' }, { capabilities: {} });
try {
    try {
        await client.connect(transport);
    } catch (error) {
        if (!(provider && error instanceof UnauthorizedError)) throw error;
        await transport.finishAuth(provider.kept.code);
        transport = connectTo();
        client = new Client({ name: 'ts-host', version: '1.0.0' }, { capabilities: {} });
        await client.connect(transport);
    }
    const tools = [];
    let cursor;
    do {
        const page = await client.listTools(cursor ? { cursor } : {});
        tools.push(...page.tools.map((t) => t.name));
        cursor = page.nextCursor;
    } while (cursor);
    const results = {};
    for (const call of calls) {
        results[call.name] = await client.callTool({ name: call.name, arguments: call.args });
    }
    console.log(JSON.stringify({
        server: client.getServerVersion(),
        protocol: transport._protocolVersion ?? null,
        logged_in: provider ? Boolean(provider.kept.tokens) : undefined,
        tools,
        calls: results,
    }));
    await client.close();
} catch (error) {
    console.log(JSON.stringify({ error: String(error && error.stack || error) }));
    await client.close().catch(() => {});
    process.exit(1);
}
