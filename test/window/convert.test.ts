// Converters between provider messages and turns: each provider's messages round-trip
// through turns, a conversation crosses from one provider to another intact, a call and
// its result are paired by id or turned into text, and malformed messages are typed errors.
import { describe, expect, it } from 'vitest';
import { fromAISDK, fromAnthropic, fromOpenAI, toAISDK, toAnthropic, toOpenAI, type WindowTurn } from '../../src/index.js';

/** A tool-using conversation as turns: a system prompt, two parallel calls and their results, an error result. */
const turns: WindowTurn[] = [
  { turn: 1, role: 'system', text: 'You are a build agent. Never exceed 40 req/s.' },
  { turn: 2, role: 'user', text: 'Why does the build fail on ci-7?' },
  {
    turn: 3,
    role: 'assistant',
    text: 'Let me look at the log and the config.',
    toolCalls: [
      { id: 'call_log', name: 'read_file', arguments: '{"path":"logs/ci-7.txt"}' },
      { id: 'call_cfg', name: 'read_file', arguments: '{"path":"ci.yml","lines":[1,40]}' },
    ],
  },
  { turn: 4, role: 'tool', text: 'error: timeout after 300 s in step link', toolCallId: 'call_log' },
  { turn: 5, role: 'tool', text: 'timeout: 300', toolCallId: 'call_cfg' },
  { turn: 6, role: 'assistant', text: '', toolCalls: [{ id: 'call_run', name: 'run', arguments: '{"cmd":"make link"}' }] },
  { turn: 7, role: 'tool', text: 'permission denied', toolCallId: 'call_run', toolError: true },
  { turn: 8, role: 'assistant', text: 'The link step times out at 300 s; raise the timeout.' },
];

/** The same conversation without what OpenAI cannot carry (an error flag on a result). */
const openaiTurns = turns.map(({ toolError: _e, ...t }) => t);

describe('OpenAI chat messages round-trip through turns', () => {
  const messages = toOpenAI(openaiTurns);
  it('toOpenAI writes calls as tool_calls and results with their tool_call_id, nothing else', () => {
    expect(messages).toEqual([
      { role: 'system', content: 'You are a build agent. Never exceed 40 req/s.' },
      { role: 'user', content: 'Why does the build fail on ci-7?' },
      {
        role: 'assistant',
        content: 'Let me look at the log and the config.',
        tool_calls: [
          { id: 'call_log', type: 'function', function: { name: 'read_file', arguments: '{"path":"logs/ci-7.txt"}' } },
          { id: 'call_cfg', type: 'function', function: { name: 'read_file', arguments: '{"path":"ci.yml","lines":[1,40]}' } },
        ],
      },
      { role: 'tool', content: 'error: timeout after 300 s in step link', tool_call_id: 'call_log' },
      { role: 'tool', content: 'timeout: 300', tool_call_id: 'call_cfg' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_run', type: 'function', function: { name: 'run', arguments: '{"cmd":"make link"}' } }] },
      { role: 'tool', content: 'permission denied', tool_call_id: 'call_run' },
      { role: 'assistant', content: 'The link step times out at 300 s; raise the timeout.' },
    ]);
  });
  it('fromOpenAI(toOpenAI(turns)) gives the turns back, and toOpenAI(fromOpenAI(messages)) the messages', () => {
    expect(fromOpenAI(messages)).toEqual(openaiTurns);
    expect(toOpenAI(fromOpenAI(messages))).toEqual(messages);
  });
  it('firstTurn numbers the turns from where the host is; a user name is the speaker', () => {
    const t = fromOpenAI([{ role: 'user', content: 'hi', name: 'dana' }, { role: 'developer', content: [{ type: 'text', text: 'be brief' }] }], { firstTurn: 41 });
    expect(t).toEqual([
      { turn: 41, role: 'user', text: 'hi', speaker: 'dana' },
      { turn: 42, role: 'system', text: 'be brief' },
    ]);
    expect(toOpenAI(t)).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi', name: 'dana' },
    ]);
  });
});

describe('Anthropic messages round-trip through turns', () => {
  const request = toAnthropic(turns);
  it('toAnthropic puts the system prompt at the top, tool_use blocks in the assistant message, tool_result blocks first in the next user message', () => {
    expect(request).toEqual({
      system: 'You are a build agent. Never exceed 40 req/s.',
      messages: [
        { role: 'user', content: 'Why does the build fail on ci-7?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me look at the log and the config.' },
            { type: 'tool_use', id: 'call_log', name: 'read_file', input: { path: 'logs/ci-7.txt' } },
            { type: 'tool_use', id: 'call_cfg', name: 'read_file', input: { path: 'ci.yml', lines: [1, 40] } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_log', content: 'error: timeout after 300 s in step link' },
            { type: 'tool_result', tool_use_id: 'call_cfg', content: 'timeout: 300' },
          ],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_run', name: 'run', input: { cmd: 'make link' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_run', content: 'permission denied', is_error: true }] },
        { role: 'assistant', content: 'The link step times out at 300 s; raise the timeout.' },
      ],
    });
  });
  it('fromAnthropic(toAnthropic(turns)) gives the turns back, and toAnthropic(fromAnthropic(request)) the request', () => {
    expect(fromAnthropic(request)).toEqual(turns);
    expect(toAnthropic(fromAnthropic(request))).toEqual(request);
  });
  it('consecutive turns of one role are one message (the API alternates roles); text blocks come back one turn each', () => {
    const t: WindowTurn[] = [
      { turn: 1, role: 'user', text: 'first' },
      { turn: 2, role: 'user', text: 'second' },
    ];
    const r = toAnthropic(t);
    expect(r).toEqual({ messages: [{ role: 'user', content: [{ type: 'text', text: 'first' }, { type: 'text', text: 'second' }] }] });
    expect(fromAnthropic(r)).toEqual(t);
  });
});

describe('AI SDK ModelMessages round-trip through turns', () => {
  const messages = toAISDK(turns);
  it('toAISDK writes tool-call parts and one tool message of tool-result parts per call', () => {
    expect(messages).toEqual([
      { role: 'system', content: 'You are a build agent. Never exceed 40 req/s.' },
      { role: 'user', content: 'Why does the build fail on ci-7?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me look at the log and the config.' },
          { type: 'tool-call', toolCallId: 'call_log', toolName: 'read_file', input: { path: 'logs/ci-7.txt' } },
          { type: 'tool-call', toolCallId: 'call_cfg', toolName: 'read_file', input: { path: 'ci.yml', lines: [1, 40] } },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'call_log', toolName: 'read_file', output: { type: 'text', value: 'error: timeout after 300 s in step link' } },
          { type: 'tool-result', toolCallId: 'call_cfg', toolName: 'read_file', output: { type: 'text', value: 'timeout: 300' } },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_run', toolName: 'run', input: { cmd: 'make link' } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_run', toolName: 'run', output: { type: 'error-text', value: 'permission denied' } }] },
      { role: 'assistant', content: 'The link step times out at 300 s; raise the timeout.' },
    ]);
  });
  it('fromAISDK(toAISDK(turns)) gives the turns back, and toAISDK(fromAISDK(messages)) the messages', () => {
    expect(fromAISDK(messages)).toEqual(turns);
    expect(toAISDK(fromAISDK(messages))).toEqual(messages);
  });
  it('a json output is kept as its JSON text', () => {
    const t = fromAISDK([
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'stat', input: { f: 'a' } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'stat', output: { type: 'json', value: { size: 40 } } }] },
    ]);
    expect(t[1]).toEqual({ turn: 2, role: 'tool', text: '{"size":40}', toolCallId: 'c1' });
  });
});

describe('a conversation crosses providers intact', () => {
  it('OpenAI → turns → Anthropic → turns → AI SDK → turns → OpenAI is the same conversation', () => {
    const openai = toOpenAI(openaiTurns);
    const viaAnthropic = fromAnthropic(toAnthropic(fromOpenAI(openai)));
    const viaAISDK = fromAISDK(toAISDK(viaAnthropic));
    expect(toOpenAI(viaAISDK)).toEqual(openai);
  });
});

describe('a call and its result are paired by id, or both become text', () => {
  const unpaired: WindowTurn[] = [
    { turn: 1, role: 'user', text: 'go' },
    { turn: 2, role: 'tool', text: 'output of a call the window no longer holds', toolCallId: 'call_gone' },
    { turn: 3, role: 'assistant', text: 'running it', toolCalls: [{ id: 'call_open', name: 'run', arguments: '{"cmd":"ls"}' }] },
  ];
  it('a result whose call is not right before it is user text naming the call; a call with no result is text in the assistant message', () => {
    expect(toOpenAI(unpaired)).toEqual([
      { role: 'user', content: 'go' },
      { role: 'user', content: '[result of tool call call_gone] output of a call the window no longer holds' },
      { role: 'assistant', content: 'running it\n[tool call call_open: run {"cmd":"ls"} — its result is not in the window]' },
    ]);
    const a = toAnthropic(unpaired);
    expect(JSON.stringify(a)).not.toMatch(/tool_use|tool_result/);
    expect(a.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(JSON.stringify(toAISDK(unpaired))).not.toMatch(/tool-call|tool-result/);
  });
  it('a second result for one call id is text, not a second tool message', () => {
    const twice: WindowTurn[] = [
      { turn: 1, role: 'assistant', text: '', toolCalls: [{ id: 'c', name: 'run', arguments: '{}' }] },
      { turn: 2, role: 'tool', text: 'one', toolCallId: 'c' },
      { turn: 3, role: 'tool', text: 'two', toolCallId: 'c' },
    ];
    expect(toOpenAI(twice).map((m) => m.role)).toEqual(['assistant', 'tool', 'user']);
  });
  it('Anthropic tool ids hold letters, digits, _ and -: others are mapped alike on both sides', () => {
    const r = toAnthropic([
      { turn: 1, role: 'assistant', text: '', toolCalls: [{ id: 'fc.1:a', name: 'run', arguments: 'not json' }] },
      { turn: 2, role: 'tool', text: 'ok', toolCallId: 'fc.1:a' },
    ]);
    expect(r.messages).toEqual([
      { role: 'assistant', content: [{ type: 'tool_use', id: 'fc_1_a', name: 'run', input: { arguments: 'not json' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'fc_1_a', content: 'ok' }] },
    ]);
  });
});

describe('malformed provider messages are INVALID_ARGUMENT, naming the message', () => {
  const refused = (f: () => unknown, message: RegExp): void => {
    expect(f).toThrowError(expect.objectContaining({ name: 'SpanguardError', code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) }));
  };
  it('OpenAI', () => {
    refused(() => fromOpenAI('x' as never), /array of messages/);
    refused(() => fromOpenAI([null as never]), /message 0 is not an object/);
    refused(() => fromOpenAI([{ role: 'function', content: 'x' }]), /message 0: role "function" is not supported/);
    refused(() => fromOpenAI([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }]), /message 0, content part 0: type "image_url" is not supported/);
    refused(() => fromOpenAI([{ role: 'tool', content: 'x' }]), /message 0: a tool message needs tool_call_id/);
    refused(() => fromOpenAI([{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'custom', custom: { name: 'x', input: '' } }] }]), /type "custom" is not supported/);
    refused(() => fromOpenAI([{ role: 'assistant', content: null, tool_calls: [{ id: '', type: 'function', function: { name: 'x', arguments: '{}' } }] }]), /toolCalls\[0\]\.id must be a non-empty string/);
    refused(() => fromOpenAI([{ role: 'user', content: 'x' }], { firstTurn: -1 }), /firstTurn must be a non-negative integer/);
  });
  it('Anthropic', () => {
    refused(() => fromAnthropic({ messages: [{ role: 'system', content: 'x' }] }), /message 0: role "system" is not supported/);
    refused(() => fromAnthropic({ messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }), /message 0, block 0: a "image" block in a user message is not supported/);
    refused(() => fromAnthropic({ messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'x', input: {} }] }] }), /"tool_use" block in a user message/);
    refused(() => fromAnthropic({ messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'x', input: { n: 1n } }] }] }), /input: not JSON/);
    refused(() => fromAnthropic(null as never), /expected \{ system\?, messages \}/);
  });
  it('AI SDK', () => {
    refused(() => fromAISDK([{ role: 'assistant', content: [{ type: 'reasoning', text: 'hm' }] }]), /message 0, part 0: type "reasoning" is not supported/);
    refused(() => fromAISDK([{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'x', input: undefined }] }]), /input: not a JSON value/);
    refused(() => fromAISDK([{ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'x', output: { type: 'execution-denied' } }] }]), /output type "execution-denied" is not supported/);
  });
  it('turns handed to a writer are checked too', () => {
    refused(() => toOpenAI([{ turn: 1, role: 'user', text: 'x', toolCalls: [] } as WindowTurn]), /toolCalls belong to an assistant turn/);
    refused(() => toAnthropic([{ turn: 1, role: 'tool', text: 5 } as unknown as WindowTurn]), /text must be a string/);
    refused(() => toAISDK([{ turn: 1, role: 'user', text: 'x', toolCallId: 'a' } as WindowTurn]), /toolCallId belongs to a tool turn/);
  });
});
