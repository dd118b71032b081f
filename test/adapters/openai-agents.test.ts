// The Agents SDK's own run loop over a SpanguardSession: a scripted Model (tool calls and
// messages, no network) through 2,000 items, facts planted at the start, recalled by the
// model's own `recall` tool call at the end, the window within budget at every model call.
import { describe, expect, it } from 'vitest';
import { Agent, Usage, run, setTracingDisabled, tool, type AgentInputItem, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { SpanStore } from '../../src/index.js';
import { SpanguardSession } from '../../src/adapters/openai-agents.js';
import { realTurns, tmpDir } from '../helpers/data.js';
import { FACTS, FILLER_CHARS, ITEMS } from './helpers.js';

setTracingDisabled(true);
const BUDGET = 3_000;

type Item = Record<string, unknown>;
const lastOf = (input: ModelRequest['input']): Item => (typeof input === 'string' ? { type: 'message', role: 'user', content: input } : (input[input.length - 1] as Item));
const textOf = (i: Item): string => (typeof i.content === 'string' ? i.content : JSON.stringify(i.content));

/**
 * The stand-in model: to a user message it answers with a tool call (`recall` for a
 * question, `run_command` otherwise); to a tool result with a message quoting it.
 */
class ScriptedModel implements Model {
  calls = 0;
  overBudget: number[] = [];
  constructor(private readonly session: () => SpanguardSession) {}
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.calls++;
    const w = this.session().window.stats();
    if (w.tokens > BUDGET) this.overBudget.push(w.tokens);
    const last = lastOf(request.input);
    const usage = new Usage({ requests: 1, inputTokens: w.tokens, outputTokens: 10, totalTokens: w.tokens + 10 });
    const callId = `call_${this.calls}`;
    if (last.type === 'message' && last.role === 'user') {
      const text = textOf(last);
      const question = /^QUESTION: (.*)$/.exec(text);
      const call = question ? { name: 'recall', arguments: JSON.stringify({ query: question[1] }) } : { name: 'run_command', arguments: JSON.stringify({ cmd: `step ${text.slice(0, 40)}` }) };
      return { usage, output: [{ type: 'function_call', callId, status: 'completed', ...call }] };
    }
    const output = last.type === 'function_call_result' ? (last.output as { text?: string }).text ?? String(last.output) : 'ok';
    return { usage, output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `Result: ${output.slice(0, 4000)}` }] }] };
  }
  // biome-ignore lint/correctness/useYield: the tests never stream, so the generator only throws
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not used');
  }
}

describe('OpenAI Agents SDK: a 2,000-item run loop over SpanguardSession recalls facts planted at the start, within budget', () => {
  it('the model recalls every planted fact through its recall tool; the window never exceeds its budget', async () => {
    const store = await SpanStore.open(tmpDir(), { durability: 'none' });
    const session = new SpanguardSession(store, { budgetTokens: BUDGET });
    const model = new ScriptedModel(() => session);
    const filler = realTurns(ITEMS / 4 + 10);
    let n = 0;
    const runCommand = tool({
      name: 'run_command',
      description: 'Runs a shell command',
      parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'], additionalProperties: false },
      strict: true,
      execute: async () => filler[n++]!.text.slice(0, FILLER_CHARS),
    });
    const agent = new Agent({ name: 'coder', instructions: 'You are a coding agent.', model, tools: [runCommand, session.recallTool()] });

    const items = () => store.stats().spans.raw;
    let runs = 0;
    for (const fact of FACTS) (await run(agent, fact.statement, { session, maxTurns: 4 }), runs++);
    while (items() < ITEMS) {
      await run(agent, `Next: ${filler[runs % filler.length]!.text.slice(0, 200)}`, { session, maxTurns: 4 });
      runs++;
      expect(session.window.stats().tokens).toBeLessThanOrEqual(BUDGET);
    }
    expect(items()).toBeGreaterThanOrEqual(ITEMS);
    const history = JSON.stringify(await session.getItems());
    for (const fact of FACTS) expect(history, 'the planted facts have left the window').not.toContain(fact.value);

    for (const fact of FACTS) {
      const r = await run(agent, `QUESTION: ${fact.question}`, { session, maxTurns: 4 });
      expect(r.finalOutput).toContain(fact.value);
      expect(r.finalOutput).toContain(fact.statement);
    }
    expect(model.overBudget).toEqual([]);
    expect(session.window.stats().passes).toBeGreaterThan(10);
    expect(store.verdict().state).toBe('lossless');

    // The runner persisted every item of a run, verbatim: user input, the call, its result, the answer.
    const next = store.stats().nextId;
    const lastItems = store
      .getMany(Array.from({ length: 8 }, (_, i) => next - 8 + i))
      .filter((s) => s?.kind === 'raw')
      .slice(-4)
      .map((s) => s!.meta!.item as AgentInputItem);
    expect(lastItems.map((i) => (i as Item).type ?? 'message')).toEqual(['message', 'function_call', 'function_call_result', 'message']);
    expect(lastItems[0]).toMatchObject({ role: 'user', content: `QUESTION: ${FACTS[2].question}` });
    expect(lastItems[1]).toMatchObject({ name: 'recall', arguments: JSON.stringify({ query: FACTS[2].question }) });
    await store.close();
  });
});
