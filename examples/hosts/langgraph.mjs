// LangGraph.js with a spanguard message history: `node examples/hosts/langgraph.mjs`.
// A stand-in agent node (no network) so it runs anywhere; with a real one, call your chat model in `agent`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { SpanStore } from 'spanguard';
import { SpanguardChatMessageHistory } from 'spanguard/langgraph';

const store = await SpanStore.open(fs.mkdtempSync(path.join(os.tmpdir(), 'sg-langgraph-')));
const history = new SpanguardChatMessageHistory(store, { budgetTokens: 2_000 });

// Stand-in agent: calls `recall` for a question, quotes a tool result, otherwise acknowledges.
let n = 0;
function agent({ messages }) {
  const last = messages[messages.length - 1];
  if (last.getType() === 'tool') return { messages: [new AIMessage(String(last.content))] };
  const text = String(last.content);
  if (text.endsWith('?')) return { messages: [new AIMessage({ content: '', tool_calls: [{ id: `c${++n}`, name: 'recall', args: { query: text }, type: 'tool_call' }] })] };
  return { messages: [new AIMessage('noted.')] };
}
const graph = new StateGraph(MessagesAnnotation)
  .addNode('agent', agent)
  .addNode('tools', new ToolNode([history.recallTool()]))
  .addEdge(START, 'agent')
  .addConditionalEdges('agent', toolsCondition, ['tools', END])
  .addEdge('tools', 'agent')
  .compile();

async function say(text) {
  await history.addMessage(new HumanMessage(text));
  const input = await history.getMessages(); // the budgeted window, not the whole conversation
  const out = await graph.invoke({ messages: input });
  await history.addMessages(out.messages.slice(input.length));
  return String(out.messages[out.messages.length - 1].content);
}
await say('The upstream API allows 40 req/s; never exceed it.');
for (let i = 2; i <= 150; i++) await say(`step ${i}: ran the build, ${i * 3} files changed.`);
const answer = await say('what rate limit does the upstream API allow?');
console.log('window:', history.window.stats().tokens, 'tokens,', history.window.stats().passes, 'passes');
console.log('answer:', answer.split('\n').find((l) => l.includes('req/s')));
console.log('verdict:', store.verdict().state);
await store.close();
