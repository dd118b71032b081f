/**
 * spanguard: keeps a long-horizon agent's transcript losslessly retrievable while a
 * compactor rewrites its live context window, and says — with evidence — whether every
 * evicted turn is still kept and retrievable by its own content (lossless).
 */
export { SpanStore } from './store.js';
export type { SpanStoreOptions, StoreProgress, TurnInput, Span, Hit, SearchOptions, SearchResult, StoreStats, Embedder, MatchedVia } from './store.js';
export type { CompactionRequest, CompactionReceipt, PassTiming } from './guard.js';
export type { AuditReport, PinnedFact } from './audit.js';
export type { Verdict, VerdictState, Evidence } from './verdict.js';
export { HitRateMonitor, VerdictMonitor, MAX_AUDIT_INTERVAL, HIT_RATE_HISTORY } from './verdict.js';
export type { GuardEvent } from './events.js';
export { detectAnchor, perturb } from './anchors.js';
export {
  SpanguardError,
  LosslessRetrievalBoundaryError,
  CompactionRefusedError,
  LockedError,
  CorruptionError,
  ErrorCode,
} from './errors.js';
export { ContextWindow, extractiveSummary, defaultCountTokens } from './window.js';
export type { ContextWindowOptions, WindowTurn, Summarizer, SummarizeInput, Message, RecallResult, WindowStats } from './window.js';
export type { PushResult, WindowOverflow, ClippedTurn, MessageFormat } from './window.js';
export { fromOpenAI, toOpenAI, fromAnthropic, toAnthropic, fromAISDK, toAISDK } from './convert.js';
export type {
  ToolCall,
  TurnStructure,
  RenderTurn,
  OpenAIMessage,
  OpenAIToolCall,
  AnthropicRequest,
  AnthropicMessage,
  AnthropicBlock,
  AISDKMessage,
  AISDKAssistantPart,
  AISDKToolResultPart,
  FromMessagesOptions,
  OpenAIMessageLike,
  AnthropicMessageLike,
  AISDKMessageLike,
} from './convert.js';
export { restoreReplica, verifyRemote, S3ObjectStore, FaultyObjectStore, ObjectStoreError } from './replica/index.js';
export type { ReplicaOptions, ReplicaStatus, RestoreResult, RemoteCheck, ObjectStore, S3Options, FaultPlan, Manifest } from './replica/index.js';
export { readTurns, TranscriptError, TRANSCRIPT_FORMATS } from './transcript.js';
export type { TranscriptFormat, TranscriptInfo } from './transcript.js';
