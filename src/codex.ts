/**
 * Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`), read a
 * line at a time. Each line is `{ timestamp, type, payload }`, `type` one of `session_meta`,
 * `response_item`, `event_msg`, `turn_context`, `compacted` (newer versions add more). The
 * conversation is in the `response_item` payloads, tagged by their own `type`: `message`
 * {role, content: [{type: input_text | output_text | input_image, text}]}, `function_call`
 * {name, arguments (a JSON string), call_id}, `function_call_output` {call_id, output (a
 * string, or an array of input_text / input_image items)}, `custom_tool_call` {name, input,
 * call_id} and its `custom_tool_call_output` {call_id, output}, `local_shell_call` {call_id,
 * action}, `web_search_call` {action}, `reasoning`. Shape as defined by `RolloutItem` and
 * `ResponseItem` in the Codex source (codex-rs/protocol).
 *
 * What becomes a turn:
 * - a `message`: the text of its text items, under its own role (`user`, `assistant`, and
 *   `developer` for the instructions Codex sends);
 * - a tool call (`function_call`, `custom_tool_call`, `local_shell_call`): role
 *   `assistant`, text `name arguments` (the arguments' JSON with newlines and tabs in its
 *   strings written as such: see readableJson), the turn's `toolCalls` [{id: call_id, name,
 *   arguments}] (kept in `meta.toolCalls`); a `web_search_call`: role `assistant`, `web_search {action}`;
 * - a tool output: role `tool`, kept with the call before it, its `toolCallId` (kept in `meta.toolCallId`) the call_id;
 *   a command's result in Codex's legacy JSON form is its output text, `meta.exitCode` its
 *   exit code.
 * Every turn carries `meta.session` (the `session_meta` id, once seen) and the line's
 * `timestamp`.
 *
 * Skipped, as carrying no conversation or repeating it: `session_meta` (its id is kept),
 * `turn_context` (model, directory, policies of a turn), `event_msg` (the UI's copy of
 * messages already in response items, token counts, command progress), `compacted` (Codex's
 * own summary of earlier items, which are replayed verbatim), other line types; `reasoning`
 * items (the model's reasoning, mostly encrypted), `ghost_snapshot` and `compaction` items,
 * image items; a message left with no text.
 */
import { badLine, checkTurn, isObject, isoTimestamp, readableJson, type TurnReader } from './transcript-line.js';
import type { WindowTurn } from './window.js';

/**
 * A tool output's text: a string, an array of content items (their text), or `{content}` as
 * some versions wrote it. A string holding Codex's legacy JSON form of a command's result,
 * `{"output": …, "metadata": {"exit_code": …, "duration_seconds": …}}`, is its `output`
 * (escaped inside the JSON, its words would not be searchable as written), and the exit code
 * goes to `meta.exitCode`.
 */
function outputOf(output: unknown, line: number): { text: string; exitCode?: number } {
  if (typeof output === 'string') {
    if (output.startsWith('{"output":')) {
      try {
        const o = JSON.parse(output) as unknown;
        if (isObject(o) && typeof o.output === 'string' && isObject(o.metadata))
          return { text: o.output, ...(Number.isInteger(o.metadata.exit_code) ? { exitCode: o.metadata.exit_code as number } : {}) };
      } catch {
        // Not that form after all: the string as written.
      }
    }
    return { text: output };
  }
  return { text: outputText(output, line) };
}

/** A tool output that is not a string: an array of content items (their text), or `{content}` as some versions wrote it. */
function outputText(output: unknown, line: number): string {
  if (Array.isArray(output)) {
    const parts: string[] = [];
    output.forEach((item, i) => {
      if (!isObject(item) || typeof item.type !== 'string') throw badLine(line, `"payload.output[${i}]" must be an item with a "type"`);
      if (typeof item.text === 'string') parts.push(item.text);
    });
    return parts.join('\n');
  }
  if (isObject(output) && typeof output.content === 'string') return output.content;
  throw badLine(line, '"payload.output" must be a string or an array of content items');
}

const str = (v: unknown, field: string, line: number): string => {
  if (typeof v !== 'string' || v.length === 0) throw badLine(line, `"${field}" must be a non-empty string`);
  return v;
};

export class CodexReader implements TurnReader {
  private turn = 0;
  private session: string | undefined;

  line(obj: Record<string, unknown>, line: number): WindowTurn[] {
    // Every rollout line, of any type, is {timestamp, type, payload}: a line without a payload
    // is of another format, not a line to skip.
    if (typeof obj.type !== 'string' || !isObject(obj.payload)) throw badLine(line, 'not a Codex rollout line: "type" must be a string and "payload" an object');
    if (obj.type === 'session_meta') {
      if (typeof obj.payload.id === 'string') this.session = obj.payload.id;
      return [];
    }
    if (obj.type !== 'response_item') return [];
    const p = obj.payload as Record<string, unknown>;
    if (typeof p.type !== 'string') throw badLine(line, '"payload.type" must be a string');
    const timestamp = isoTimestamp(obj.timestamp, 'timestamp', line);
    const base = this.session === undefined ? {} : { session: this.session };
    const at = timestamp === undefined ? {} : { timestamp };
    const call = (name: string, id: string | undefined, text: string, args: string): WindowTurn => ({
      turn: 0,
      role: 'assistant',
      text,
      attachToPrevious: false,
      ...at,
      ...(id !== undefined ? { toolCalls: [{ id, name, arguments: args }] } : {}),
      ...(Object.keys(base).length > 0 ? { meta: { ...base } } : {}),
    });
    let turn: WindowTurn | undefined;
    switch (p.type) {
      case 'message': {
        const role = str(p.role, 'payload.role', line);
        if (!Array.isArray(p.content)) throw badLine(line, '"payload.content" must be an array of content items');
        const parts: string[] = [];
        p.content.forEach((item, i) => {
          if (!isObject(item) || typeof item.type !== 'string') throw badLine(line, `"payload.content[${i}]" must be an item with a "type"`);
          if (item.type === 'input_text' || item.type === 'output_text') {
            if (typeof item.text !== 'string') throw badLine(line, `"payload.content[${i}].text" must be a string`);
            parts.push(item.text);
          }
        });
        const text = parts.join('\n');
        if (text.trim().length > 0) turn = { turn: 0, role, text, attachToPrevious: false, ...at, ...(Object.keys(base).length > 0 ? { meta: { ...base } } : {}) };
        break;
      }
      case 'function_call': {
        const name = str(p.name, 'payload.name', line);
        const id = str(p.call_id, 'payload.call_id', line);
        if (typeof p.arguments !== 'string') throw badLine(line, '"payload.arguments" must be a string');
        turn = call(name, id, `${name} ${readableJson(p.arguments)}`, p.arguments);
        break;
      }
      case 'custom_tool_call': {
        const name = str(p.name, 'payload.name', line);
        const id = str(p.call_id, 'payload.call_id', line);
        if (typeof p.input !== 'string') throw badLine(line, '"payload.input" must be a string');
        turn = call(name, id, `${name} ${p.input}`, JSON.stringify({ input: p.input }));
        break;
      }
      case 'local_shell_call': {
        if (!isObject(p.action)) throw badLine(line, '"payload.action" must be an object');
        const id = p.call_id === undefined || p.call_id === null ? undefined : str(p.call_id, 'payload.call_id', line);
        turn = call('local_shell', id, `local_shell ${readableJson(JSON.stringify(p.action))}`, JSON.stringify(p.action));
        break;
      }
      case 'web_search_call': {
        if (!isObject(p.action)) throw badLine(line, '"payload.action" must be an object');
        turn = call('web_search', undefined, `web_search ${readableJson(JSON.stringify(p.action))}`, JSON.stringify(p.action));
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output': {
        const id = str(p.call_id, 'payload.call_id', line);
        const out = outputOf(p.output, line);
        turn = {
          turn: 0,
          role: 'tool',
          text: out.text,
          attachToPrevious: true,
          ...at,
          toolCallId: id,
          meta: { ...base, ...(out.exitCode !== undefined ? { exitCode: out.exitCode } : {}) },
        };
        break;
      }
      // reasoning, ghost_snapshot, compaction, and item types newer than this reader: no conversation.
    }
    if (!turn) return [];
    turn.turn = ++this.turn;
    return [checkTurn(turn, line)];
  }
}
