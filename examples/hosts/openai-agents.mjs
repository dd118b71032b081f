// The OpenAI Agents SDK with a spanguard session: `node examples/hosts/openai-agents.mjs`.
// A stand-in model (no network) so it runs anywhere; with a real one, drop `model:` and set OPENAI_API_KEY.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, Usage, run, setTracingDisabled } from '@openai/agents';
import { SpanStore } from 'spanguard';
import { SpanguardSession } from 'spanguard/openai-agents';

setTracingDisabled(true);
const store = await SpanStore.open(fs.mkdtempSync(path.join(os.tmpdir(), 'sg-agents-')));
const session = new SpanguardSession(store, { budgetTokens: 2_000 });

// Stand-in model: asks `recall` for a question, otherwise acknowledges; quotes a tool result.
const model = {
  async getResponse({ input }) {
    const last = input[input.length - 1];
    const usage = new Usage();
    if (last.type === 'function_call_result') return { usage, output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: last.output.text }] }] };
    const text = typeof last.content === 'string' ? last.content : '';
    if (text.endsWith('?')) return { usage, output: [{ type: 'function_call', callId: `c${Date.now()}`, name: 'recall', arguments: JSON.stringify({ query: text }), status: 'completed' }] };
    return { usage, output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'noted.' }] }] };
  },
  async *getStreamedResponse() {},
};
const agent = new Agent({ name: 'assistant', instructions: 'Use recall for anything said earlier.', model, tools: [session.recallTool()] });

await run(agent, 'The upstream API allows 40 req/s; never exceed it.', { session });
for (let i = 2; i <= 150; i++) await run(agent, `step ${i}: ran the build, ${i * 3} files changed.`, { session });
const answer = await run(agent, 'what rate limit does the upstream API allow?', { session });
console.log('window:', session.window.stats().tokens, 'tokens,', session.window.stats().passes, 'passes');
console.log('answer:', answer.finalOutput.split('\n').find((l) => l.includes('req/s')));
console.log('verdict:', store.verdict().state);
await store.close();
