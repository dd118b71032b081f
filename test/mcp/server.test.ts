// The MCP server driven by the MCP SDK's own Client: in process (InMemoryTransport) and as
// the child process an agent host spawns (`node dist/cli.js mcp --store DIR` over stdio).
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SpanStore } from '../../src/index.js';
import { createMcpServer } from '../../src/mcp.js';
import { NEVER, PLANTED, plantedStore } from './helpers.js';

const TOOLS = ['audit', 'exact', 'pin', 'recall', 'search', 'verdict'];
type TextContent = { type: 'text'; text: string }[];

let dir: string;
let plantedId: number;
beforeAll(async () => {
  ({ dir, plantedId } = await plantedStore());
});

/** The checks every transport must pass, on a connected client. */
function protocolChecks(connect: () => Promise<Client>) {
  let client: Client;
  beforeAll(async () => {
    client = await connect();
  });
  afterAll(async () => {
    await client?.close();
  });

  it('tools/list names the six tools, each with a JSON schema of its arguments', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
    const recall = tools.find((t) => t.name === 'recall')!;
    expect(recall.inputSchema).toMatchObject({ type: 'object', required: ['query'], properties: { query: { type: 'string' }, k: { type: 'integer' } } });
    expect(tools.find((t) => t.name === 'pin')!.inputSchema).toMatchObject({ required: ['fact', 'spanId'] });
    for (const t of tools) expect(t.description!.length, t.name).toBeGreaterThan(20);
  });

  it('recall finds the planted fact, evicted from the window long ago, verbatim with its span', async () => {
    const r = await client.callTool({ name: 'recall', arguments: { query: 'how often does the staging database password rotate?' } });
    expect(r.isError).toBeFalsy();
    expect((r.content as TextContent)[0]!.text).toContain(PLANTED);
    expect(r.structuredContent).toMatchObject({ status: 'found', verdict: 'lossless' });
    const hits = (r.structuredContent as { hits: { spanId: number; uri: string; text: string }[] }).hits;
    expect(hits[0]).toMatchObject({ spanId: plantedId, uri: `span://${plantedId}`, text: PLANTED });
  });

  it('recall of a value never stated says "not in transcript"', async () => {
    const r = await client.callTool({ name: 'recall', arguments: { query: NEVER } });
    expect(r.structuredContent).toMatchObject({ status: 'not-in-transcript', hits: [] });
    expect((r.content as TextContent)[0]!.text).toBe('not in transcript');
  });

  it('verdict reports the state, its reasons and whether every evicted turn is still kept and retrievable', async () => {
    const r = await client.callTool({ name: 'verdict', arguments: {} });
    expect(r.structuredContent).toMatchObject({ state: 'lossless', trustExactRecall: true });
    expect((r.content as TextContent)[0]!.text).toMatch(/^lossless\n- /);
    expect((r.structuredContent as { passes: number }).passes).toBeGreaterThan(0);
  });

  it('search and exact answer with span ids; search of a never-stated value names the reason', async () => {
    const ex = await client.callTool({ name: 'exact', arguments: { phrase: 'ops-kestrel-42' } });
    expect((ex.structuredContent as { hits: { spanId: number }[] }).hits.map((h) => h.spanId)).toEqual([plantedId]);
    const miss = await client.callTool({ name: 'search', arguments: { query: NEVER } });
    expect(miss.structuredContent).toMatchObject({ miss: true, missReason: 'value-not-stated' });
    expect((miss.content as TextContent)[0]!.text).toMatch(/^not in transcript \(value-not-stated: /);
  });

  it('span://<id> reads the span verbatim, with its turns and role', async () => {
    const r = await client.readResource({ uri: `span://${plantedId}` });
    expect(r.contents).toHaveLength(1);
    expect(r.contents[0]).toMatchObject({ uri: `span://${plantedId}`, mimeType: 'text/plain', text: PLANTED, _meta: { kind: 'raw', role: 'user', turnStart: 1, turnEnd: 1 } });
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates.map((t) => t.uriTemplate)).toEqual(['span://{id}']);
  });

  it('a span that does not exist is an error naming it; a malformed argument is refused by its schema', async () => {
    await expect(client.readResource({ uri: 'span://99999999' })).rejects.toThrow(/no raw or summary span 99999999/);
    await expect(client.readResource({ uri: 'span://abc' })).rejects.toThrow(/no raw or summary span abc/);
    const bad = await client.callTool({ name: 'recall', arguments: { query: '' } });
    expect(bad.isError).toBe(true);
    const badPin = await client.callTool({ name: 'pin', arguments: { fact: 'x', spanId: -1 } });
    expect(badPin.isError).toBe(true);
  });
}

describe('in process (InMemoryTransport): tools, recall, verdict, span resource', () => {
  let store: SpanStore;
  afterAll(async () => {
    await store?.close();
  });
  protocolChecks(async () => {
    store = await SpanStore.open(dir, { readOnly: true });
    const server = await createMcpServer(store);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(a);
    return client;
  });
});

describe('as a child process (spanguard mcp --store DIR over stdio): tools, recall, verdict, span resource', () => {
  protocolChecks(async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [path.resolve('dist/cli.js'), 'mcp', '--store', dir], stderr: 'pipe' });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(transport);
    return client;
  });
});
