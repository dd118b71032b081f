/**
 * Claude Code session files (`~/.claude/projects/<project>/<session>.jsonl`), read a line at
 * a time. Each line is one JSON object with a `type`; the conversation is in the `user` and
 * `assistant` lines: `{ type, uuid, parentUuid, sessionId, timestamp, isSidechain?, isMeta?,
 * isCompactSummary?, message: { role, content } }`, where `content` is a string or an array
 * of blocks — `text` {text}, `tool_use` {id, name, input}, `tool_result` {tool_use_id,
 * content, is_error?}, `thinking` {thinking, signature}, `image` {source}. Shape as
 * published in community JSON schemas of the format (CLI 2.0–2.1) and in the Anthropic
 * Messages API's content blocks.
 *
 * What becomes a turn:
 * - a `user` or `assistant` line: its text blocks and its tool calls (`name {input JSON}`,
 *   one a line, newlines and tabs in the JSON's strings written as such: see readableJson),
 *   role `user` / `assistant`; its tool calls as the turn's `toolCalls` (id, name, arguments: the input's JSON), kept in `meta.toolCalls`;
 * - each `tool_result` block: a turn of its own, role `tool`, kept with the call before it,
 *   its call's id as the turn's `toolCallId`, kept in `meta.toolCallId` (`toolError` and `meta.isError` when the tool failed). A user line holds its
 *   results before any text, so they follow the call they answer.
 * Every turn carries `meta.session` (the `sessionId`) and `meta.uuid` (the line's), and its
 * `timestamp` from the line; a sub-agent's line (`isSidechain`) has `meta.sidechain: true`.
 *
 * Skipped, as carrying no conversation: lines of any other type (`summary`: a title for the
 * session; `system`: the CLI's own notices — local commands, hook summaries, compaction
 * boundaries, API errors; `file-history-snapshot`, `queue-operation`, `progress`, …);
 * `isMeta` lines (text the CLI injects, not typed by anyone); `isCompactSummary` lines (the
 * CLI's own summary of earlier lines of the same file, which are replayed verbatim);
 * `thinking` and `redacted_thinking` blocks (the model's reasoning, which later requests do
 * not send back); image and document blocks (no text); a line left with no text.
 */
import { badLine, checkTurn, isObject, isoTimestamp, readableJson, type TurnReader } from './transcript-line.js';
import type { WindowTurn } from './window.js';

/** Text of a tool result's `content`: a string, or the text of its text blocks (images have none). */
function resultText(content: unknown, line: number, field: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw badLine(line, `"${field}" must be a string or an array of blocks`);
  const parts: string[] = [];
  content.forEach((b, i) => {
    if (typeof b === 'string') parts.push(b);
    else if (!isObject(b) || typeof b.type !== 'string') throw badLine(line, `"${field}[${i}]" must be a block with a "type"`);
    else if (b.type === 'text') {
      if (typeof b.text !== 'string') throw badLine(line, `"${field}[${i}].text" must be a string`);
      parts.push(b.text);
    }
  });
  return parts.join('\n');
}

export class ClaudeCodeReader implements TurnReader {
  private turn = 0;

  line(obj: Record<string, unknown>, line: number): WindowTurn[] {
    if (typeof obj.type !== 'string') throw badLine(line, 'not a Claude Code session line: "type" must be a string');
    // A Codex rollout line ({timestamp, type, payload}) would otherwise pass as a line to skip.
    if (isObject(obj.payload) && !isObject(obj.message)) throw badLine(line, 'not a Claude Code session line: a "payload" and no "message" (a Codex rollout line?)');
    if (obj.type !== 'user' && obj.type !== 'assistant') return [];
    if (obj.isMeta === true || obj.isCompactSummary === true) return [];
    const role = obj.type;
    const message = obj.message;
    if (!isObject(message)) throw badLine(line, '"message" must be an object');
    const timestamp = isoTimestamp(obj.timestamp, 'timestamp', line);
    const base: Record<string, unknown> = {};
    if (typeof obj.sessionId === 'string') base.session = obj.sessionId;
    if (typeof obj.uuid === 'string') base.uuid = obj.uuid;
    if (obj.isSidechain === true) base.sidechain = true;
    const at = timestamp === undefined ? {} : { timestamp };

    const content = message.content;
    const texts: string[] = [];
    const calls: { id: string; name: string; arguments: string }[] = [];
    const results: WindowTurn[] = [];
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      content.forEach((b, i) => {
        const field = `message.content[${i}]`;
        if (!isObject(b) || typeof b.type !== 'string') throw badLine(line, `"${field}" must be a block with a "type"`);
        if (b.type === 'text') {
          if (typeof b.text !== 'string') throw badLine(line, `"${field}.text" must be a string`);
          texts.push(b.text);
        } else if (b.type === 'tool_use') {
          if (typeof b.id !== 'string' || b.id.length === 0) throw badLine(line, `"${field}.id" must be a non-empty string`);
          if (typeof b.name !== 'string' || b.name.length === 0) throw badLine(line, `"${field}.name" must be a non-empty string`);
          calls.push({ id: b.id, name: b.name, arguments: JSON.stringify(b.input ?? {}) });
          texts.push(`${b.name} ${readableJson(JSON.stringify(b.input ?? {}))}`);
        } else if (b.type === 'tool_result') {
          if (typeof b.tool_use_id !== 'string' || b.tool_use_id.length === 0) throw badLine(line, `"${field}.tool_use_id" must be a non-empty string`);
          results.push({
            turn: 0,
            role: 'tool',
            text: resultText(b.content, line, `${field}.content`),
            attachToPrevious: true,
            ...at,
            toolCallId: b.tool_use_id,
            ...(b.is_error === true ? { toolError: true } : {}),
            meta: { ...base, ...(b.is_error === true ? { isError: true } : {}) },
          });
        }
        // thinking, redacted_thinking, image, document, …: no conversation text.
      });
    } else throw badLine(line, '"message.content" must be a string or an array of blocks');

    const out = results;
    const text = texts.join('\n');
    if (text.trim().length > 0 || calls.length > 0)
      out.push({ turn: 0, role, text, attachToPrevious: false, ...at, ...(calls.length > 0 ? { toolCalls: calls } : {}), meta: { ...base } });
    for (const t of out) {
      t.turn = ++this.turn;
      checkTurn(t, line);
    }
    return out;
  }
}
