// `spanguard mcp` as a process: without the optional MCP SDK it exits with a message naming
// what to install (and the rest of the package works); it closes the store when the client
// goes away; a read-only server sees its writer's appends and refuses writes as tool errors.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { SpanStore } from '../../src/index.js';
import { createMcpServer } from '../../src/mcp.js';
import { tmpDir } from '../helpers/data.js';
import { CLI } from '../cli/helpers.js';

/** A module hook that makes the MCP SDK unresolvable, as in a project that never installed it. */
function withoutSdk(): string {
  const hooks = `export async function resolve(specifier, context, next) {
    if (specifier.startsWith('@modelcontextprotocol/sdk')) {
      const e = new Error("Cannot find package '@modelcontextprotocol/sdk' imported from " + context.parentURL);
      e.code = 'ERR_MODULE_NOT_FOUND';
      throw e;
    }
    return next(specifier, context);
  }`;
  const file = path.join(tmpDir(), 'no-sdk.mjs');
  fs.writeFileSync(file, `import { register } from 'node:module';\nregister(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});\n`);
  return file;
}

describe('without the optional MCP SDK: spanguard mcp exits 1 naming what to install; the core package works', () => {
  it('exits 1 with one line, creates no store, and search, stats and the library still run', async () => {
    const hook = withoutSdk();
    const dir = path.join(tmpDir(), 'store');
    const r = spawnSync(process.execPath, ['--import', hook, CLI, 'mcp', '--store', dir], { encoding: 'utf8', input: '' });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^spanguard mcp: the MCP server needs @modelcontextprotocol\/sdk and zod .*npm install @modelcontextprotocol\/sdk zod/);
    expect(r.stdout).toBe('');
    expect(fs.existsSync(dir)).toBe(false);

    const s = await SpanStore.open(dir, { durability: 'none' });
    await s.append({ turn: 1, role: 'user', text: 'the deploy key is kestrel-42' });
    await s.close();
    const search = spawnSync(process.execPath, ['--import', hook, CLI, 'exact', dir, 'kestrel-42'], { encoding: 'utf8' });
    expect(search.status, search.stderr).toBe(0);
    expect(search.stdout).toContain('the deploy key is kestrel-42');
    const lib = spawnSync(process.execPath, ['--import', hook, '--input-type=module', '-e', `import(${JSON.stringify(path.resolve('dist/index.js'))}).then((m) => console.log(typeof m.SpanStore.open))`], { encoding: 'utf8' });
    expect(lib.stdout.trim(), lib.stderr).toBe('function');
  });

  it('createMcpServer rejects with MISSING_PEER_DEPENDENCY when the SDK cannot be loaded', () => {
    const hook = withoutSdk();
    const script = `import(${JSON.stringify(path.resolve('dist/mcp.js'))}).then(async (m) => {
      const { SpanStore } = await import(${JSON.stringify(path.resolve('dist/index.js'))});
      const s = await SpanStore.open(${JSON.stringify(path.join(tmpDir(), 's'))}, { durability: 'none' });
      await m.createMcpServer(s).then(() => console.log('created'), (e) => console.log(e.name, e.code, e.details.packages.join(',')));
      await s.close();
    })`;
    const r = spawnSync(process.execPath, ['--import', hook, '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.stdout.trim(), r.stderr).toBe('MissingPeerError MISSING_PEER_DEPENDENCY @modelcontextprotocol/sdk,zod');
  });
});

describe('spanguard mcp closes the store when its client goes away', () => {
  it('answers initialize on stdout, exits 0 when stdin ends, and leaves the store openable by a writer', async () => {
    const dir = path.join(tmpDir(), 'store');
    const child = spawn(process.execPath, [CLI, 'mcp', '--store', dir], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const answered = new Promise<void>((resolve) =>
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('\n')) resolve();
      }),
    );
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`);
    await answered;
    expect(JSON.parse(out.split('\n')[0]!)).toMatchObject({ id: 1, result: { serverInfo: { name: 'spanguard' }, capabilities: { tools: {}, resources: {} } } });
    const code = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.stdin.end();
    expect(await code, err).toBe(0);
    const s = await SpanStore.open(dir);
    expect(s.stats().readOnly).toBe(false);
    await s.close();
  });

  it('--store is required (exit 2); --help prints the usage (exit 0)', () => {
    const missing = spawnSync(process.execPath, [CLI, 'mcp'], { encoding: 'utf8' });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^spanguard mcp: --store DIR is required/);
    const help = spawnSync(process.execPath, [CLI, 'mcp', '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: spanguard mcp --store DIR/);
    const main = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    expect(main.stdout).toMatch(/^ {2}mcp --store DIR /m);
  });
});

describe('a read-only server sees what its writer appends and refuses writes as tool errors', () => {
  it('recall finds a turn appended after the server started; pin and audit answer READ_ONLY', async () => {
    const dir = tmpDir();
    const writer = await SpanStore.open(dir, { durability: 'sync' });
    await writer.append({ turn: 1, role: 'user', text: 'the first turn of the session' });
    const reader = await SpanStore.open(dir, { readOnly: true });
    const server = await createMcpServer(reader);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(a);
    try {
      const id = await writer.append({ turn: 2, role: 'assistant', text: 'The build cache lives in /var/cache/orion-7.' });
      const r = await client.callTool({ name: 'recall', arguments: { query: 'where does the build cache live?' } });
      expect(r.structuredContent).toMatchObject({ status: 'found' });
      expect((r.structuredContent as { hits: { spanId: number }[] }).hits[0]!.spanId).toBe(id);
      const res = await client.readResource({ uri: `span://${id}` });
      expect(res.contents[0]!.text).toBe('The build cache lives in /var/cache/orion-7.');
      for (const [name, args] of [
        ['pin', { fact: '/var/cache/orion-7', spanId: id }],
        ['audit', {}],
      ] as const) {
        const w = await client.callTool({ name, arguments: args });
        expect(w.isError, name).toBe(true);
        expect(w.structuredContent, name).toMatchObject({ code: 'READ_ONLY' });
      }
    } finally {
      await client.close();
      await reader.close();
      await writer.close();
    }
  });

  it('pin on a writable server records the pin, and audit checks it', async () => {
    const dir = tmpDir();
    const store = await SpanStore.open(dir, { durability: 'none' });
    const id = await store.append({ turn: 1, role: 'user', text: 'Never deploy on Fridays; the freeze window starts at 14:00 UTC.' });
    const server = await createMcpServer(store);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(a);
    try {
      const pinned = store.stats().pinnedFacts;
      const p = await client.callTool({ name: 'pin', arguments: { fact: 'the freeze window starts at 14:00 UTC', spanId: id } });
      expect(p.isError).toBeFalsy();
      expect(store.stats().pinnedFacts).toBe(pinned + 1);
      const au = await client.callTool({ name: 'audit', arguments: {} });
      expect(au.structuredContent).toMatchObject({ passed: true });
      expect((au.structuredContent as { checked: number }).checked).toBeGreaterThanOrEqual(1);
      const unknown = await client.callTool({ name: 'pin', arguments: { fact: 'x', spanId: 12345 } });
      expect(unknown.structuredContent).toMatchObject({ code: 'UNKNOWN_SPAN' });
    } finally {
      await client.close();
      await store.close();
    }
  });
});
