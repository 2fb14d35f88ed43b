// A small deterministic MCP server on the official TypeScript SDK
// (npm `@modelcontextprotocol/sdk`, pinned by scripts/install-interop.sh),
// for interop tests of the client-side features: sampling, elicitation,
// roots, progress and logging. Its tools follow the conformance suite's
// server scenarios (same names, same argument and result shapes).
//
// Usage:
//   node ts_everything_server.mjs                  # stdio
//   node ts_everything_server.mjs --http PORT      # Streamable HTTP at /mcp
//
// With --http it binds 127.0.0.1:PORT (0 picks a free port) and prints
// `listening on http://127.0.0.1:PORT/mcp` as the first stdout line.
//
// The SDK is loaded from the interop cache ($SWITCHBOARD_CACHE/npm, default
// <repo>/.cache/npm), not from a node_modules beside this file; the SDK
// 1.x speaks the session era only (2025-11-25 and older).

import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const cache = process.env.SWITCHBOARD_CACHE || join(here, '..', '..', '..', '.cache');
const require = createRequire(join(cache, 'npm', 'package.json'));

const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StdioServerTransport } = require('@modelcontextprotocol/sdk/server/stdio.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const {
    CreateMessageResultSchema,
    ErrorCode,
    McpError,
    RootsListChangedNotificationSchema,
    isInitializeRequest,
} = require('@modelcontextprotocol/sdk/types.js');
const { z } = require('zod');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t) => ({ content: [{ type: 'text', text: t }] });

/** One server per session (stdio: one in all), with every tool registered. */
function buildServer() {
    const server = new McpServer(
        { name: 'switchboard-ts-everything', version: '1.0.0' },
        { capabilities: { logging: {} } },
    );
    // Counts `notifications/roots/list_changed` so a test can see that the
    // client told the server its roots changed.
    let rootsChanged = 0;
    server.server.setNotificationHandler(RootsListChangedNotificationSchema, () => {
        rootsChanged += 1;
    });
    const related = (extra) => ({ relatedRequestId: extra.requestId });

    server.registerTool(
        'test_simple_text',
        { description: 'Returns a fixed text.' },
        async () => text('This is a simple text response for testing.'),
    );

    server.registerTool(
        'test_tool_with_progress',
        { description: 'Reports progress 0, 50, 100 of 100 when the call carries a progressToken.' },
        async (extra) => {
            const token = extra._meta?.progressToken;
            for (const [i, progress] of [0, 50, 100].entries()) {
                if (i > 0) await sleep(50);
                if (token !== undefined) {
                    await extra.sendNotification({
                        method: 'notifications/progress',
                        params: { progressToken: token, progress, total: 100, message: `step ${i + 1} of 3` },
                    });
                }
            }
            return text(`Progress complete (token: ${token === undefined ? 'none' : JSON.stringify(token)})`);
        },
    );

    server.registerTool(
        'test_logging_tool',
        {
            description:
                'Sends three log messages (info, warning, error) during the call, ' +
                'those below the level of logging/setLevel left out.',
        },
        async (extra) => {
            for (const [i, level] of ['info', 'warning', 'error'].entries()) {
                // The SDK drops what is below the session's logging/setLevel;
                // over HTTP these go on the GET stream (no related request).
                await server.sendLoggingMessage(
                    { level, logger: 'ts-everything', data: `log message ${i + 1} (${level})` },
                    extra.sessionId,
                );
                await sleep(10);
            }
            return text('Logged 3 messages');
        },
    );

    server.registerTool(
        'test_sampling',
        {
            description: 'Asks the client to sample an LLM with the prompt; returns its text.',
            inputSchema: { prompt: z.string().describe('The prompt to send to the LLM') },
        },
        async ({ prompt }, extra) => {
            const result = await extra.sendRequest(
                {
                    method: 'sampling/createMessage',
                    params: {
                        messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
                        maxTokens: 100,
                        systemPrompt: 'You are a test.',
                        modelPreferences: { hints: [{ name: 'test-model' }], speedPriority: 0.5 },
                    },
                },
                CreateMessageResultSchema,
            );
            const content = Array.isArray(result.content) ? result.content[0] : result.content;
            const answer = content?.type === 'text' ? content.text : JSON.stringify(content);
            return text(`LLM response: ${answer} (model: ${result.model}, stopReason: ${result.stopReason ?? 'none'})`);
        },
    );

    server.registerTool(
        'test_elicitation',
        {
            description: 'Asks the user for a username and email (form elicitation).',
            inputSchema: { message: z.string().describe('The message to show the user') },
        },
        async ({ message }, extra) => {
            const result = await server.server.elicitInput(
                {
                    message,
                    requestedSchema: {
                        type: 'object',
                        properties: {
                            username: { type: 'string', description: "User's response" },
                            email: { type: 'string', description: "User's email address", format: 'email' },
                        },
                        required: ['username', 'email'],
                    },
                },
                related(extra),
            );
            return text(`User response: ${JSON.stringify({ action: result.action, content: result.content ?? null })}`);
        },
    );

    server.registerTool(
        'test_elicitation_sep1034_defaults',
        { description: 'Form elicitation whose schema has a default for each primitive type.' },
        async (extra) => {
            const result = await server.server.elicitInput(
                {
                    message: 'Test client default value handling - please accept with defaults',
                    requestedSchema: {
                        type: 'object',
                        properties: {
                            name: { type: 'string', description: 'User name', default: 'John Doe' },
                            age: { type: 'integer', description: 'User age', default: 30 },
                            score: { type: 'number', description: 'User score', default: 95.5 },
                            status: {
                                type: 'string',
                                description: 'User status',
                                enum: ['active', 'inactive', 'pending'],
                                default: 'active',
                            },
                            verified: { type: 'boolean', description: 'Verification status', default: true },
                        },
                        required: [],
                    },
                },
                related(extra),
            );
            return text(
                `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`,
            );
        },
    );

    server.registerTool(
        'test_elicitation_sep1330_enums',
        { description: 'Form elicitation with each of the five enum shapes (SEP-1330).' },
        async (extra) => {
            const result = await server.server.elicitInput(
                {
                    message: 'Pick from each kind of enum',
                    requestedSchema: {
                        type: 'object',
                        properties: {
                            untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
                            titledSingle: {
                                type: 'string',
                                oneOf: [
                                    { const: 'value1', title: 'First Option' },
                                    { const: 'value2', title: 'Second Option' },
                                    { const: 'value3', title: 'Third Option' },
                                ],
                            },
                            legacyEnum: {
                                type: 'string',
                                enum: ['opt1', 'opt2', 'opt3'],
                                enumNames: ['Option One', 'Option Two', 'Option Three'],
                            },
                            untitledMulti: {
                                type: 'array',
                                items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
                            },
                            titledMulti: {
                                type: 'array',
                                items: {
                                    anyOf: [
                                        { const: 'value1', title: 'First Choice' },
                                        { const: 'value2', title: 'Second Choice' },
                                        { const: 'value3', title: 'Third Choice' },
                                    ],
                                },
                            },
                        },
                        required: [],
                    },
                },
                related(extra),
            );
            return text(
                `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`,
            );
        },
    );

    server.registerTool(
        'test_elicitation_timeout',
        {
            description: 'Form elicitation that the server gives up on after 300 ms (notifications/cancelled).',
            inputSchema: { message: z.string().describe('The message to show the user') },
        },
        async ({ message }, extra) => {
            try {
                const result = await server.server.elicitInput(
                    {
                        message,
                        requestedSchema: {
                            type: 'object',
                            properties: { answer: { type: 'string', description: 'Anything' } },
                        },
                    },
                    { ...related(extra), timeout: 300 },
                );
                return text(`Elicitation answered in time: action=${result.action}`);
            } catch (error) {
                return text(`Elicitation given up: ${error.message}`);
            }
        },
    );

    server.registerTool(
        'test_url_elicitation',
        { description: 'URL-mode elicitation; on accept, notifies completion.' },
        async (extra) => {
            const elicitationId = 'ts-url-elicitation-1';
            const result = await server.server.elicitInput(
                {
                    mode: 'url',
                    message: 'Please authorize at the test page',
                    url: 'https://example.com/authorize?session=ts',
                    elicitationId,
                },
                related(extra),
            );
            if (result.action === 'accept') {
                await server.server.createElicitationCompletionNotifier(elicitationId, related(extra))();
            }
            return text(`URL elicitation: action=${result.action}, elicitationId=${elicitationId}`);
        },
    );

    // The -32042 flow: the first call is refused with one URL to visit; the
    // "out-of-band" visit completes 300 ms later (announced with
    // notifications/elicitation/complete, not tied to any request), and
    // from then on the tool succeeds.
    let authorized = false;
    server.registerTool(
        'test_url_elicitation_required',
        { description: 'Refused with -32042 (URL elicitation required) until the URL flow completes.' },
        async () => {
            if (authorized) return text('Authorized call succeeded');
            const elicitationId = 'ts-url-required-1';
            setTimeout(() => {
                authorized = true;
                server.server
                    .notification({ method: 'notifications/elicitation/complete', params: { elicitationId } })
                    .catch(() => {});
            }, 300);
            throw new McpError(ErrorCode.UrlElicitationRequired, 'This tool needs an authorization first.', {
                elicitations: [
                    {
                        mode: 'url',
                        message: 'Authorize the test app',
                        url: 'https://auth.example.com/authorize?session=required',
                        elicitationId,
                    },
                ],
            });
        },
    );

    server.registerTool(
        'test_multi_ask',
        {
            description: 'Needs a form and a sample, asked one after the other.',
            inputSchema: { prompt: z.string().describe('The prompt to send to the LLM') },
        },
        async ({ prompt }, extra) => {
            const who = await server.server.elicitInput(
                {
                    message: 'Who is asking?',
                    requestedSchema: {
                        type: 'object',
                        properties: {
                            username: { type: 'string', description: "User's response" },
                            email: { type: 'string', description: "User's email address" },
                        },
                        required: ['username', 'email'],
                    },
                },
                related(extra),
            );
            if (who.action !== 'accept') throw new Error(`elicitation was ${who.action}`);
            const sampled = await server.server.createMessage(
                {
                    messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
                    maxTokens: 100,
                    systemPrompt: 'You are a test.',
                },
                related(extra),
            );
            return text(
                `Multi: username=${who.content.username}, LLM response: ${sampled.content.text} ` +
                    `(model: ${sampled.model}, stopReason: ${sampled.stopReason ?? 'none'})`,
            );
        },
    );

    server.registerTool(
        'test_list_roots',
        { description: "Lists the client's roots (roots/list); also says how many list_changed notifications came." },
        async (extra) => {
            const result = await server.server.listRoots(undefined, related(extra));
            return text(JSON.stringify({ roots: result.roots, listChanged: rootsChanged }));
        },
    );

    return server;
}

async function serveStdio() {
    await buildServer().connect(new StdioServerTransport());
}

async function serveHttp(port) {
    const sessions = new Map();
    const httpServer = createServer(async (req, res) => {
        const url = new URL(req.url, 'http://127.0.0.1');
        if (url.pathname !== '/mcp') {
            res.writeHead(404).end();
            return;
        }
        try {
            const sessionId = req.headers['mcp-session-id'];
            if (sessionId !== undefined) {
                const transport = sessions.get(sessionId);
                if (!transport) {
                    res.writeHead(404, { 'content-type': 'application/json' }).end(
                        JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }),
                    );
                    return;
                }
                await transport.handleRequest(req, res);
                return;
            }
            if (req.method !== 'POST') {
                res.writeHead(400).end('Missing Mcp-Session-Id');
                return;
            }
            const body = await readJson(req);
            if (!isInitializeRequest(body)) {
                res.writeHead(400, { 'content-type': 'application/json' }).end(
                    JSON.stringify({
                        jsonrpc: '2.0',
                        id: body?.id ?? null,
                        error: { code: -32600, message: 'Bad Request: no session; send initialize first' },
                    }),
                );
                return;
            }
            const transport = new StreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: (id) => sessions.set(id, transport),
            });
            transport.onclose = () => {
                if (transport.sessionId) sessions.delete(transport.sessionId);
            };
            await buildServer().connect(transport);
            await transport.handleRequest(req, res, body);
        } catch (error) {
            if (!res.headersSent) {
                res.writeHead(400, { 'content-type': 'application/json' }).end(
                    JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: String(error) } }),
                );
            }
        }
    });
    await new Promise((resolve) => httpServer.listen(port, '127.0.0.1', resolve));
    process.stdout.write(`listening on http://127.0.0.1:${httpServer.address().port}/mcp\n`);
}

function readJson(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        req.on('data', (chunk) => chunks.push(chunk));
        req.on('end', () => {
            try {
                resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
            } catch (error) {
                reject(error);
            }
        });
        req.on('error', reject);
    });
}

const args = process.argv.slice(2);
const httpAt = args.indexOf('--http');
if (httpAt >= 0) {
    const port = Number(args[httpAt + 1] ?? '0');
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
        process.stderr.write(`--http takes a port (0 for any), not ${args[httpAt + 1]}\n`);
        process.exit(2);
    }
    await serveHttp(port);
} else {
    await serveStdio();
}
