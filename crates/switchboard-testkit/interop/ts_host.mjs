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

const transport = /^https?:\/\//.test(command)
    ? new StreamableHTTPClientTransport(new URL(command))
    : new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'ts-host', version: '1.0.0' }, { capabilities: {} });
try {
    await client.connect(transport);
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
        tools,
        calls: results,
    }));
    await client.close();
} catch (error) {
    console.log(JSON.stringify({ error: String(error && error.stack || error) }));
    await client.close().catch(() => {});
    process.exit(1);
}
