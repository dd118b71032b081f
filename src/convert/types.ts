/** The shapes of provider messages and of a turn's tool-call structure. */

/** One tool call an assistant turn made. `arguments` is JSON text, as OpenAI sends it. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** The structure a turn carries for the providers' message shapes (stored in the span's meta). */
export interface TurnStructure {
  /** Assistant turns: the tool calls it made. */
  toolCalls?: ToolCall[];
  /** Tool turns: the id of the call this turn is the result of. */
  toolCallId?: string;
  /** Tool turns: the result is an error (Anthropic `is_error`, AI SDK `error-text`). */
  toolError?: boolean;
}

/** What the renderers read from a turn. */
export interface RenderTurn extends TurnStructure {
  role: string;
  text: string;
  speaker?: string;
}

/** The meta keys where the window keeps a turn's structure. */
export const STRUCTURE_KEYS = ['toolCalls', 'toolCallId', 'toolError'] as const;

// ---------------------------------------------------------------- provider shapes

/** OpenAI Chat Completions: assignable to the `openai` package's `ChatCompletionMessageParam`. */
export type OpenAIMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string; name?: string }
  | { role: 'assistant'; content: string | null; name?: string; tool_calls?: OpenAIToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** Anthropic Messages: the request's `system` and `messages` (content blocks as the API's JSON). */
export interface AnthropicRequest {
  system?: string;
  messages: AnthropicMessage[];
}

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | AnthropicBlock[];
}

export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'tool_result'; tool_use_id: string; content?: string; is_error?: boolean };

/** Vercel AI SDK: assignable to `ModelMessage` from `ai`. */
export type AISDKMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | AISDKAssistantPart[] }
  | { role: 'tool'; content: AISDKToolResultPart[] };

export type AISDKAssistantPart = { type: 'text'; text: string } | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown };

export interface AISDKToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: { type: 'text' | 'error-text'; value: string };
}

/** Options of the `from*` converters. */
export interface FromMessagesOptions {
  /** Turn number of the first turn produced (default 1); each turn produced takes the next. */
  firstTurn?: number;
}


/** What `fromOpenAI` accepts: any Chat Completions message (the `openai` package's `ChatCompletionMessageParam` included). */
export interface OpenAIMessageLike {
  role: string;
  content?: unknown;
  name?: string;
  tool_calls?: readonly unknown[] | null;
  tool_call_id?: string;
}

/** What `fromAnthropic` accepts in `messages` (the SDK's `MessageParam` included). */
export interface AnthropicMessageLike {
  role: string;
  content: unknown;
}

/** What `fromAISDK` accepts (`ModelMessage` from `ai` included). */
export interface AISDKMessageLike {
  role: string;
  content: unknown;
}

