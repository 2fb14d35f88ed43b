// An MCP host on the official TypeScript SDK's client (npm
// `@modelcontextprotocol/sdk`, pinned by scripts/install-interop.sh) that
// subscribes to a resource, for interop tests of `switchboard serve`.
//
// Usage:
//   node ts_subscriber.mjs URI TOOL JSON_ARGS -- COMMAND [ARGS…]
//
// Spawns COMMAND over stdio, sends resources/subscribe for URI, calls TOOL
// with JSON_ARGS (which makes the server change the resource), and waits
// (at most 20 s) for notifications/resources/updated about URI. Prints one
// JSON line: {"updated": [every updated URI heard], "call": result}. A
// failure prints {"error": message} and exits 1.

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const cache = process.env.SWITCHBOARD_CACHE || join(here, '..', '..', '..', '.cache');
const require = createRequire(join(cache, 'npm', 'package.json'));

const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { ResourceUpdatedNotificationSchema } = require('@modelcontextprotocol/sdk/types.js');

const argv = process.argv.slice(2);
const split = argv.indexOf('--');
if (split !== 3 || split === argv.length - 1) {
    console.log(JSON.stringify({ error: 'usage: ts_subscriber.mjs URI TOOL JSON -- COMMAND [ARGS…]' }));
    process.exit(1);
}
const [uri, tool, json] = argv.slice(0, 3);
const [command, ...args] = argv.slice(split + 1);

const transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
const client = new Client({ name: 'ts-subscriber', version: '1.0.0' }, { capabilities: {} });
const updated = [];
let heard;
const heardIt = new Promise((resolve) => { heard = resolve; });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => {
    updated.push(note.params.uri);
    if (note.params.uri === uri) heard();
});
try {
    await client.connect(transport);
    await client.subscribeResource({ uri });
    const call = await client.callTool({ name: tool, arguments: JSON.parse(json) });
    let timer;
    const late = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no notifications/resources/updated for ${uri} in 20 s (heard ${JSON.stringify(updated)})`)), 20000);
    });
    await Promise.race([heardIt, late]);
    clearTimeout(timer);
    console.log(JSON.stringify({ updated, call }));
    await client.close();
} catch (error) {
    console.log(JSON.stringify({ error: String(error && error.stack || error) }));
    await client.close().catch(() => {});
    process.exit(1);
}
