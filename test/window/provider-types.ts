// Type-checked by provider-types.test.ts (tsc --noEmit), never run: what messages({ format })
// and the converters return is assignable to the providers' own SDK types, and what those
// SDKs hand a host can be read back into turns without a cast. The `openai` package is the
// one @openai/agents depends on (tsconfig.provider-types.json maps it); Anthropic's request
// body is @anthropic-ai/sdk's MessageCreateParamsNonStreaming (and checked at runtime too,
// messages-format.test.ts).
import type { MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages/messages.js';
import type { ModelMessage } from 'ai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions.js';
import { fromAISDK, fromAnthropic, fromOpenAI, toAISDK, toAnthropic, toOpenAI, type AnthropicRequest, type ContextWindow } from '../../src/index.js';

declare const window: ContextWindow;
declare const fromSdk: ChatCompletionMessageParam[];
declare const fromAi: ModelMessage[];

export const openai: ChatCompletionMessageParam[] = window.messages({ format: 'openai' });
export const body: ChatCompletionCreateParamsNonStreaming = { model: 'gpt-4.1', messages: window.messages({ format: 'openai' }) };
export const aiSdk: ModelMessage[] = window.messages({ format: 'ai-sdk' });
export const anthropic: AnthropicRequest = window.messages({ format: 'anthropic' });
const { system, messages } = window.messages({ format: 'anthropic' });
export const anthropicBody: MessageCreateParamsNonStreaming = { model: 'claude-sonnet-4-5', max_tokens: 1024, ...(system !== undefined ? { system } : {}), messages };
declare const fromAnthropicSdk: MessageParam[];
export const anthropicSdkBack: AnthropicRequest = toAnthropic(fromAnthropic({ messages: fromAnthropicSdk }));

export const openaiBack: ChatCompletionMessageParam[] = toOpenAI(fromOpenAI(fromSdk));
export const aiBack: ModelMessage[] = toAISDK(fromAISDK(fromAi));
export const anthropicBack: AnthropicRequest = toAnthropic(fromAnthropic(anthropic));

// The format-less messages() carry spanguard's own keys and host roles: not a request body.
// @ts-expect-error role is any string there, and spanId is not a Chat Completions key
export const notOpenAI: ChatCompletionMessageParam[] = window.messages();
