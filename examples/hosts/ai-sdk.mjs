// The Vercel AI SDK with spanguard's middleware: `node examples/hosts/ai-sdk.mjs`.
// A stand-in model (no network) so it runs anywhere; with a real one, wrap your provider's model instead.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateText, stepCountIs, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { SpanStore } from 'spanguard';
import { spanguardConversation } from 'spanguard/ai-sdk';

const store = await SpanStore.open(fs.mkdtempSync(path.join(os.tmpdir(), 'sg-ai-sdk-')));
const conversation = spanguardConversation(store, { budgetTokens: 2_000 });

// Stand-in model: calls `recall` for a question, quotes a tool result, otherwise acknowledges.
const usage = { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: 0 } };
const stop = { unified: 'stop', raw: undefined };
const mock = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const last = prompt[prompt.length - 1];
    if (last.role === 'tool') return { content: [{ type: 'text', text: String(last.content[0].output.value) }], finishReason: stop, usage, warnings: [] };
    const text = last.content[0].text;
    if (text.endsWith('?')) return { content: [{ type: 'tool-call', toolCallId: `c${prompt.length}`, toolName: 'recall', input: JSON.stringify({ query: text }) }], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] };
    return { content: [{ type: 'text', text: 'noted.' }], finishReason: stop, usage, warnings: [] };
  },
});
const model = wrapLanguageModel({ model: mock, middleware: conversation.middleware });

let messages = [];
async function say(text) {
  messages.push({ role: 'user', content: text });
  const r = await generateText({ model, system: 'Use recall for anything said earlier.', messages, tools: { recall: conversation.recall }, stopWhen: stepCountIs(3) });
  messages = conversation.prune([...messages, ...r.response.messages]); // the log holds the rest
  return r.text;
}
await say('The upstream API allows 40 req/s; never exceed it.');
for (let i = 2; i <= 150; i++) await say(`step ${i}: ran the build, ${i * 3} files changed.`);
const answer = await say('what rate limit does the upstream API allow?');
console.log('window:', conversation.window.stats().tokens, 'tokens,', conversation.window.stats().passes, 'passes');
console.log('answer:', answer.split('\n').find((l) => l.includes('req/s')));
console.log('verdict:', store.verdict().state);
await store.close();
