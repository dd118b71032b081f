/**
 * Provider messages ⇄ turns. A turn is what the store keeps (role, text) plus the tool-call
 * structure a model request needs back: the calls an assistant turn made (`toolCalls`) and,
 * on a tool turn, the call it answers (`toolCallId`). `fromOpenAI`, `fromAnthropic` and
 * `fromAISDK` read a provider's message list into turns; `toOpenAI`, `toAnthropic` and
 * `toAISDK` write turns as that provider's request messages, and `ContextWindow.messages({
 * format })` renders the live window through the same functions.
 *
 * Every rendering is a valid request body for its provider: one system message (all system
 * turns, in order, joined by a blank line), every tool result right after the call it
 * answers with the call's id. A result whose call is not right before it, and a call whose
 * result is not right after it, become plain text with a marker (a provider refuses an
 * unanswered call and an unasked result alike).
 */
export type * from './convert/types.js';
export { STRUCTURE_KEYS } from './convert/types.js';
export { checkStructure, structureOf } from './convert/check.js';
export { toAISDK, toAnthropic, toOpenAI } from './convert/to.js';
export { fromAISDK, fromAnthropic, fromOpenAI } from './convert/from.js';
