// The AI SDK's own loop (generateText with tools and steps) through a model wrapped with
// spanguard's middleware: a scripted MockLanguageModelV3 (tool calls and text, no network)
// through 2,000 messages, facts planted at the start, recalled by the model's own `recall`
// tool call at the end, the prompt the model gets within budget at every step.
import { describe, expect, it } from 'vitest';
import { generateText, stepCountIs, tool, wrapLanguageModel, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { SpanStore } from '../../src/index.js';
import { spanguardConversation } from '../../src/adapters/ai-sdk.js';
import { realTurns, tmpDir } from '../helpers/data.js';
import { FACTS, FILLER_CHARS, ITEMS } from './helpers.js';

const BUDGET = 3_000;
type Prompt = { role: string; content: unknown }[];
const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };

describe('AI SDK: generateText over 2,000 messages through the middleware recalls facts planted at the start, within budget', () => {
  it('the model recalls every planted fact through its recall tool; the window never exceeds its budget', async () => {
    const store = await SpanStore.open(tmpDir(), { durability: 'none' });
    const conv = spanguardConversation(store, { budgetTokens: BUDGET });
    const overBudget: number[] = [];
    let longestPrompt = 0;
    let calls = 0;
    // The stand-in model: a user message gets a tool call (recall for a question), a tool result gets text quoting it.
    const mock = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        calls++;
        const tokens = conv.window.stats().tokens;
        if (tokens > BUDGET) overBudget.push(tokens);
        longestPrompt = Math.max(longestPrompt, prompt.length);
        expect(prompt[0]).toEqual({ role: 'system', content: 'You are a coding agent.' });
        const last = (prompt as Prompt)[prompt.length - 1]!;
        if (last.role === 'user') {
          const text = (last.content as { text: string }[])[0]!.text;
          const q = /^QUESTION: (.*)$/.exec(text);
          const [toolName, input] = q ? ['recall', { query: q[1] }] : ['run_command', { cmd: `step ${calls}` }];
          return { content: [{ type: 'tool-call', toolCallId: `call_${calls}`, toolName, input: JSON.stringify(input) }], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] };
        }
        const out = (last.content as { output: { value: unknown } }[])[0]!.output.value;
        return { content: [{ type: 'text', text: `Result: ${String(out).slice(0, 4000)}` }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
      },
    });
    const model = wrapLanguageModel({ model: mock, middleware: conv.middleware });
    const filler = realTurns(ITEMS / 4 + 10);
    let n = 0;
    const tools = {
      run_command: tool({ description: 'Runs a shell command', inputSchema: z.object({ cmd: z.string() }), execute: async () => filler[n++]!.text.slice(0, FILLER_CHARS) }),
      recall: conv.recall,
    };
    // The host's chat loop: its message list goes to every call, pruned of what the log holds.
    let messages: ModelMessage[] = [];
    let longestList = 0;
    const say = async (text: string) => {
      messages.push({ role: 'user', content: [{ type: 'text', text }] });
      longestList = Math.max(longestList, messages.length);
      const r = await generateText({ model, system: 'You are a coding agent.', messages, tools, stopWhen: stepCountIs(3) });
      messages.push(...r.response.messages);
      messages = conv.prune(messages);
      expect(conv.window.stats().tokens).toBeLessThanOrEqual(BUDGET);
      return r;
    };
    for (const fact of FACTS) await say(fact.statement);
    for (let i = 0; store.stats().spans.raw < ITEMS; i++) await say(`Next: ${filler[i % filler.length]!.text.slice(0, 200)}`);
    expect(longestList).toBeLessThanOrEqual(3); // the last stored message, the answer, the new question

    for (const fact of FACTS) {
      const r = await say(`QUESTION: ${fact.question}`);
      expect(r.text).toContain(fact.value);
      expect(r.text).toContain(fact.statement);
    }
    expect(overBudget).toEqual([]);
    expect(longestPrompt).toBeLessThan(100); // the model saw the window, not the host's 2,000 messages
    expect(conv.window.stats().passes).toBeGreaterThan(10);
    expect(store.verdict().state).toBe('lossless');
    await store.close();
  });
});
