/**
 * spanguard as a Model Context Protocol server: an agent host that speaks MCP (a coding
 * agent, a desktop assistant) reaches a store through tools — `recall`, `search`, `exact`,
 * `verdict`, `pin`, `audit` — and reads any span verbatim as the resource `span://<id>`.
 *
 * The MCP SDK (`@modelcontextprotocol/sdk`, with `zod` for the tools' schemas) is an
 * optional peer dependency: it is imported only when a server is created, so the core
 * package loads without it, and `spanguard mcp` without it exits with a message that says
 * what to install.
 */
import { parseArgs } from 'node:util';
import { SpanguardError, ErrorCode } from './errors.js';
import { SpanStore } from './store.js';
import { ContextWindow } from './window.js';
import { RECALL_K } from './search.js';
import type { Hit, SearchResult } from './store.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** The packages `createMcpServer` needs, named in the message when one cannot be loaded. */
export const MCP_PEERS = ['@modelcontextprotocol/sdk', 'zod'] as const;

/** A peer dependency that is not installed: the message says what to install. */
export class MissingPeerError extends SpanguardError {
  constructor(
    readonly feature: string,
    readonly packages: readonly string[],
    cause: unknown,
  ) {
    super(
      ErrorCode.MISSING_PEER_DEPENDENCY,
      `${feature} needs ${packages.join(' and ')} (optional peer ${packages.length > 1 ? 'dependencies' : 'dependency'} of spanguard), which cannot be loaded: install ${packages.join(' ')} beside spanguard (npm install ${packages.join(' ')})`,
      { packages: [...packages], cause: (cause as Error)?.message ?? String(cause) },
    );
    this.name = 'MissingPeerError';
  }
}

/** True for the error Node raises when a package (not a file inside it) cannot be resolved. */
function isNotFound(e: unknown, pkg: string): boolean {
  const code = (e as NodeJS.ErrnoException)?.code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((e as Error).message).includes(pkg);
}

async function loadSdk() {
  try {
    const [mcp, zod] = await Promise.all([import('@modelcontextprotocol/sdk/server/mcp.js'), import('zod')]);
    return { McpServer: mcp.McpServer, ResourceTemplate: mcp.ResourceTemplate, z: zod.z };
  } catch (e) {
    if (MCP_PEERS.some((p) => isNotFound(e, p))) throw new MissingPeerError('the MCP server', MCP_PEERS, e);
    throw e;
  }
}

export interface McpServerOptions {
  /** Server name reported to the client (default `spanguard`). */
  name?: string;
  /** Server version reported to the client (default: spanguard's). */
  version?: string;
}

const text = (s: string, structured?: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text: s }],
  ...(structured ? { structuredContent: structured } : {}),
});

/** A typed spanguard error as a tool error the model can read; anything else propagates (the SDK reports it as an error result too). */
function toolError(e: unknown): CallToolResult {
  if (e instanceof SpanguardError) return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.message}` }], structuredContent: { code: e.code, message: e.message } };
  throw e;
}

const hitLine = (h: Hit) => `[span ${h.spanId}, turns ${h.turnStart}–${h.turnEnd}, ${h.kind}${h.role ? `, ${h.speaker ?? h.role}` : ''}, via ${h.via}] span://${h.spanId}\n${h.text}`;

const hitJson = (h: Hit) => ({
  spanId: h.spanId,
  uri: `span://${h.spanId}`,
  kind: h.kind,
  turnStart: h.turnStart,
  turnEnd: h.turnEnd,
  ...(h.role !== undefined ? { role: h.role } : {}),
  ...(h.speaker !== undefined ? { speaker: h.speaker } : {}),
  ...(h.timestamp !== undefined ? { timestamp: h.timestamp } : {}),
  via: h.via,
  score: h.score,
  text: h.text,
});

function searchText(r: SearchResult): string {
  if (r.miss || r.hits.length === 0) return `not in transcript${r.missReason ? ` (${r.missReason}${r.missDetail ? `: ${r.missDetail}` : ''})` : ''}`;
  const header = r.verdict !== 'lossless' ? `retrieval ${r.verdict}: do not trust exact values\n` : '';
  return header + r.hits.map(hitLine).join('\n\n');
}

/**
 * An MCP server over `store`: six tools and the `span://{id}` resource template. Connect it
 * to a transport (`StdioServerTransport` for a host that spawns it, `InMemoryTransport` in
 * process). A read-only store is refreshed before each call, so it sees what its writer
 * appended; `pin` and `audit` on it answer `READ_ONLY` as a tool error.
 */
export async function createMcpServer(store: SpanStore, options: McpServerOptions = {}): Promise<McpServer> {
  if (!(store instanceof SpanStore)) throw new SpanguardError(ErrorCode.INVALID_ARGUMENT, 'createMcpServer expects an open SpanStore');
  const { McpServer, ResourceTemplate, z } = await loadSdk();
  const server = new McpServer(
    { name: options.name ?? 'spanguard', version: options.version ?? (await spanguardVersion()) },
    {
      instructions:
        'spanguard keeps every turn of this transcript verbatim. Call `recall` for anything that left your context (a value, a constraint, a file name, a decision); "not in transcript" means it was never stated. Check `verdict` before acting on an exact value: only `lossless` vouches for recall.',
    },
  );
  // recall runs the call ContextWindow.recall makes (raw spans and summaries, a raw span
  // expected), through a window of its own that holds no turns: the host's window is in
  // the host's process, so a tool call and its result come back as the spans they are.
  const recaller = new ContextWindow(store, { budgetTokens: 64 });
  const fresh = async () => {
    if (store.options.readOnly) await store.refresh();
  };
  const k = z.number().int().min(1).max(100).optional();

  server.registerTool(
    'recall',
    {
      title: 'Recall from the transcript',
      description:
        'Finds what was said earlier in the transcript, verbatim, even after it left the context window: a value, a constraint, a decision, a file name. Returns the raw turns that state it with their span ids, or "not in transcript" when it was never stated.',
      inputSchema: { query: z.string().min(1).max(16_384).describe('what to look for, in the words it was likely said in'), k: k.describe(`hits (default ${RECALL_K})`) },
      annotations: { readOnlyHint: true },
    },
    async ({ query, k }) => {
      try {
        await fresh();
        const r = await recaller.recall(query, k === undefined ? {} : { k });
        return text(r.text, { status: r.status, verdict: r.verdict, hits: r.hits.map(hitJson) });
      } catch (e) {
        return toolError(e);
      }
    },
  );

  server.registerTool(
    'search',
    {
      title: 'Search the transcript',
      description: 'Hybrid search (exact phrase, BM25, vectors) over raw turns and, with kinds, summaries; filters by turns and speaker. Says "not in transcript" and why when nothing states the query\'s specific content.',
      inputSchema: {
        query: z.string().min(1).max(16_384),
        k: k.describe('hits (default 10)'),
        kinds: z.array(z.enum(['raw', 'summary'])).min(1).optional().describe('namespaces (default raw)'),
        turns: z.tuple([z.number().int().min(0), z.number().int().min(0)]).optional().describe('inclusive turn range'),
        speaker: z.string().min(1).max(256).optional().describe('only spans said by this speaker or role'),
      },
      annotations: { readOnlyHint: true },
    },
    async ({ query, k, kinds, turns, speaker }) => {
      try {
        await fresh();
        const r = await store.search(query, { ...(k ? { k } : {}), ...(kinds ? { kinds } : {}), ...(turns ? { turns } : {}), ...(speaker ? { speaker } : {}) });
        return text(searchText(r), { miss: r.miss, ...(r.missReason ? { missReason: r.missReason } : {}), ...(r.missDetail ? { missDetail: r.missDetail } : {}), verdict: r.verdict, hits: r.hits.map(hitJson) });
      } catch (e) {
        return toolError(e);
      }
    },
  );

  server.registerTool(
    'exact',
    {
      title: 'Exact phrase',
      description: 'Every raw turn that contains the phrase byte for byte.',
      inputSchema: { phrase: z.string().min(1).max(16_384), limit: z.number().int().min(1).max(1000).optional() },
      annotations: { readOnlyHint: true },
    },
    async ({ phrase, limit }) => {
      try {
        await fresh();
        const hits = store.findExact(phrase, limit === undefined ? {} : { limit });
        return text(hits.length === 0 ? 'not in transcript' : hits.map(hitLine).join('\n\n'), { hits: hits.map(hitJson) });
      } catch (e) {
        return toolError(e);
      }
    },
  );

  server.registerTool(
    'verdict',
    {
      title: 'Verdict',
      description: 'Whether every evicted turn is still kept and retrievable by its own content: lossless, degraded or unknown, with its reasons and evidence.',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    async () => {
      try {
        await fresh();
        const v = store.verdict();
        return text(`${v.state}\n${v.reasons.map((r) => `- ${r}`).join('\n')}`, {
          state: v.state,
          trustExactRecall: v.trustExactRecall,
          reasons: v.reasons,
          passes: v.passes,
          compactionsSinceAudit: v.compactionsSinceAudit,
          evidence: v.evidence,
        });
      } catch (e) {
        return toolError(e);
      }
    },
  );

  server.registerTool(
    'pin',
    {
      title: 'Pin a fact',
      description: 'Records that a fact must come back verbatim from a raw span (checked by every audit). Needs a writable store.',
      inputSchema: { fact: z.string().min(1).max(16_384), spanId: z.number().int().min(0) },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    },
    async ({ fact, spanId }) => {
      try {
        await store.pin(fact, spanId);
        return text(`pinned to span ${spanId}: ${fact}`, { pinned: true, spanId, fact });
      } catch (e) {
        return toolError(e);
      }
    },
  );

  server.registerTool(
    'audit',
    {
      title: 'Audit',
      description: 'Checks every pinned fact and a sample of anchors and evicted turns through the retrieval path, records the result, and returns it. Needs a writable store.',
      inputSchema: { full: z.boolean().optional().describe('check 16 times the usual sample') },
      annotations: { readOnlyHint: false, destructiveHint: false },
    },
    async ({ full }) => {
      try {
        const a = await store.audit({ full: full === true });
        const lines = [`audit ${a.passed ? 'passed' : 'failed'}: ${a.checked} fact(s) checked, ${a.checkedEvicted} from evicted turns`];
        for (const f of a.failures) lines.push(`- span ${f.spanId}: ${f.why}: ${f.fact}`);
        return text(lines.join('\n'), { passed: a.passed, checked: a.checked, checkedEvicted: a.checkedEvicted, failures: a.failures, verdict: store.verdict().state });
      } catch (e) {
        return toolError(e);
      }
    },
  );

  server.registerResource(
    'span',
    new ResourceTemplate('span://{id}', { list: undefined }),
    { title: 'A span, verbatim', description: 'One span of the log (a raw turn or a summary) by its id, byte for byte.', mimeType: 'text/plain' },
    async (uri, { id }) => {
      const raw = Array.isArray(id) ? id[0] : id;
      const n = /^\d{1,16}$/.test(raw ?? '') ? Number(raw) : NaN;
      await fresh();
      const span = Number.isSafeInteger(n) ? store.get(n) : undefined;
      if (!span || (span.kind !== 'raw' && span.kind !== 'summary')) throw new SpanguardError(ErrorCode.UNKNOWN_SPAN, `no raw or summary span ${String(raw)}`, { uri: uri.href });
      return {
        contents: [
          {
            uri: uri.href,
            mimeType: 'text/plain',
            text: span.text,
            _meta: { spanId: span.id, kind: span.kind, role: span.role, turnStart: span.turnStart, turnEnd: span.turnEnd, timestamp: span.timestamp, ...(span.speaker ? { speaker: span.speaker } : {}) },
          },
        ],
      };
    },
  );
  return server;
}

async function spanguardVersion(): Promise<string> {
  const { packageRoot } = await import('./native.js');
  const fs = await import('node:fs');
  const path = await import('node:path');
  return (JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

export const MCP_HELP = `Usage: spanguard mcp --store DIR [--read-only]

Serves the store over the Model Context Protocol on stdin/stdout, for an agent host that
spawns it (Claude Code, Codex, any MCP client). Tools: recall, search, exact, verdict, pin,
audit; resources: span://<id> (a span, verbatim). Needs the optional peer dependencies
@modelcontextprotocol/sdk and zod. Runs until stdin closes or SIGTERM/SIGINT, then closes
the store.

Options:
  --store DIR          the store (created when DIR holds none, unless --read-only)
  --read-only          open as a reader: another process writes; pin and audit answer
                       READ_ONLY; every call first sees what the writer appended
  --json               accepted for symmetry with the other commands (the protocol is JSON)`;

/**
 * `spanguard mcp`: the server on stdio until the client goes away. Returns the exit code
 * (0 after a clean shutdown, 2 on a bad command line, 1 when the SDK is missing or the
 * store cannot be opened), printing one line on stderr; stdout carries only the protocol.
 */
export async function runMcpCommand(argv: string[]): Promise<number> {
  let values: { store?: string; 'read-only'?: boolean; help?: boolean };
  try {
    values = parseArgs({ args: argv, options: { store: { type: 'string' }, 'read-only': { type: 'boolean' }, help: { type: 'boolean' }, json: { type: 'boolean' } }, strict: true, allowPositionals: false }).values;
  } catch (e) {
    console.error(`spanguard mcp: ${(e as Error).message}`);
    return 2;
  }
  if (values.help) return (console.log(MCP_HELP), 0);
  if (!values.store) return (console.error(`spanguard mcp: --store DIR is required\n${MCP_HELP}`), 2);
  let store: SpanStore | undefined;
  try {
    await loadSdk(); // before opening: a missing SDK must not create a store
    const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
    store = await SpanStore.open(values.store, { readOnly: values['read-only'] === true });
    const server = await createMcpServer(store);
    const transport = new StdioServerTransport();
    const done = new Promise<void>((resolve) => {
      process.stdin.once('end', resolve);
      process.stdin.once('close', resolve);
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    await server.connect(transport);
    await done;
    await server.close();
    await store.close();
    return 0;
  } catch (e) {
    await store?.close().catch(() => {});
    if (e instanceof SpanguardError) {
      console.error(`spanguard mcp: ${e instanceof MissingPeerError ? '' : `${e.code}: `}${e.message}`);
      return 1;
    }
    throw e;
  }
}
