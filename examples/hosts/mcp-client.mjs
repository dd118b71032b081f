// What an MCP host does with `spanguard mcp`: `node examples/hosts/mcp-client.mjs`.
// It writes a short session into a store, then spawns the server the way Claude Code or
// Codex would (the command in docs/integrations.md) and calls its tools as a model would.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ContextWindow, SpanStore } from 'spanguard';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-mcp-'));
const store = await SpanStore.open(dir);
const window = new ContextWindow(store, { budgetTokens: 2_000 });
await window.push({ turn: 1, role: 'user', text: 'The upstream API allows 40 req/s; never exceed it.' });
for (let turn = 2; turn <= 400; turn++) await window.push({ turn, role: turn % 2 ? 'user' : 'assistant', text: `step ${turn}: ran the build, ${turn * 3} files changed.` });
await store.close(); // the server takes the writer lock

const cli = fileURLToPath(new URL('../../dist/cli.js', import.meta.url)); // `npx spanguard` where installed
const client = new Client({ name: 'example-host', version: '1.0.0' });
await client.connect(new StdioClientTransport({ command: process.execPath, args: [cli, 'mcp', '--store', dir] }));
console.log('tools:', (await client.listTools()).tools.map((t) => t.name).join(', '));
const found = await client.callTool({ name: 'recall', arguments: { query: 'what rate limit does the upstream API allow?' } });
console.log('recall:', found.structuredContent.status, found.structuredContent.hits[0].uri, found.structuredContent.hits[0].text);
const span = await client.readResource({ uri: found.structuredContent.hits[0].uri });
console.log('resource:', span.contents[0].text);
console.log('verdict:', (await client.callTool({ name: 'verdict', arguments: {} })).structuredContent.state);
await client.close();
