/**
 * The store's options: checked whole at open (an unknown or ill-typed option throws
 * INVALID_OPTIONS before anything is created), then resolved against the defaults.
 */
import { DurabilityCode, type Durability } from '../native.js';
import { ErrorCode, SpanguardError } from '../errors.js';
import { DEFAULT_MATCH_POLICY, type MatchPolicy } from '../match.js';
import type { ReplicaOptions } from '../replica/index.js';
import type { CatchUpProgress } from '../catchup.js';
import type { Embedder, SpanStoreOptions, StoreProgress } from './types.js';

const DEFAULTS = {
  horizonSeconds: 30 * 24 * 3600,
  durability: 'group' as Durability,
  dims: 256,
  auditEvery: 50,
  unknownAfter: 50,
  policy: 'refuse' as const,
  maxDivergence: 0.1,
  grounding: 'mark' as const,
  segmentBytes: 64 * 1024 * 1024,
  maxTextBytes: 16 * 1024 * 1024,
  vectorScalar: 'f16' as const,
  vectorPartitionAbove: Number.POSITIVE_INFINITY,
  hitRateProbes: 16,
  auditSample: 32,
  backgroundCatchUpAbove: 10_000,
};

export function invalid(message: string): never {
  throw new SpanguardError(ErrorCode.INVALID_OPTIONS, message);
}

function checkPositiveInt(name: string, v: unknown, max = Number.MAX_SAFE_INTEGER): void {
  if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v <= 0 || v > max))
    invalid(`${name} must be a positive integer${max < Number.MAX_SAFE_INTEGER ? ` <= ${max}` : ''}, got ${String(v)}`);
}

/** An integer of at least `min`, or Infinity (`undefined`: the default). */
function checkCountOrInfinity(name: string, v: unknown, min: number): void {
  if (v !== undefined && (typeof v !== 'number' || !(v >= min) || (Number.isFinite(v) && !Number.isInteger(v))))
    invalid(`${name} must be ${min === 0 ? 'a non-negative integer' : `an integer of at least ${min}`} or Infinity, got ${String(v)}`);
}

export type Resolved = Required<Omit<SpanStoreOptions, 'embedder' | 'rawTtlSeconds' | 'matchPolicy' | 'replica' | 'onCatchUp' | 'onProgress'>> & {
  replica: ReplicaOptions | undefined;
  onCatchUp: ((progress: CatchUpProgress) => void) | undefined;
  onProgress: ((progress: StoreProgress) => void) | undefined;
  embedder: Embedder | undefined;
  rawTtlSeconds: number;
  matchPolicy: MatchPolicy;
};

export function resolveOptions(options: SpanStoreOptions): Resolved {
  if (options === null || typeof options !== 'object') invalid('options must be an object');
  const known = new Set([
    'horizonSeconds',
    'rawTtlSeconds',
    'bestEffort',
    'durability',
    'embedder',
    'dims',
    'auditEvery',
    'unknownAfter',
    'policy',
    'maxDivergence',
    'grounding',
    'readOnly',
    'segmentBytes',
    'maxTextBytes',
    'vectorScalar',
    'vectorPartitionAbove',
    'hitRateProbes',
    'auditSample',
    'matchPolicy',
    'replica',
    'backgroundCatchUpAbove',
    'onCatchUp',
    'onProgress',
  ]);
  for (const k of Object.keys(options)) if (!known.has(k)) invalid(`unknown option "${k}"`);
  if (options.durability !== undefined && !(options.durability in DurabilityCode) && options.durability !== 'replicated')
    invalid(`durability must be 'sync', 'group', 'none' or 'replicated', got ${String(options.durability)}`);
  if (options.durability === 'replicated' && options.replica === undefined) invalid(`durability 'replicated' needs the replica option`);
  if (options.policy !== undefined && options.policy !== 'refuse' && options.policy !== 'spill')
    invalid(`policy must be 'refuse' or 'spill', got ${String(options.policy)}`);
  if (options.vectorScalar !== undefined && !['f32', 'f16', 'i8'].includes(options.vectorScalar)) invalid(`vectorScalar must be 'f32', 'f16' or 'i8'`);
  const pa = options.vectorPartitionAbove;
  checkCountOrInfinity('vectorPartitionAbove', pa, 64);
  if (options.embedder !== undefined && typeof options.embedder !== 'function') invalid('embedder must be a function');
  if (options.embedder !== undefined && options.dims === undefined) invalid('dims is required with a host embedder');
  if (options.grounding !== undefined && options.grounding !== 'mark' && options.grounding !== 'refuse')
    invalid(`grounding must be 'mark' or 'refuse', got ${String(options.grounding)}`);
  if (options.maxDivergence !== undefined && (typeof options.maxDivergence !== 'number' || !(options.maxDivergence >= 0 && options.maxDivergence <= 2)))
    invalid(`maxDivergence must be a number in 0..2, got ${String(options.maxDivergence)}`);
  checkPositiveInt('horizonSeconds', options.horizonSeconds);
  checkPositiveInt('rawTtlSeconds', options.rawTtlSeconds);
  checkPositiveInt('dims', options.dims, 4096);
  checkPositiveInt('auditEvery', options.auditEvery);
  checkPositiveInt('unknownAfter', options.unknownAfter);
  checkPositiveInt('segmentBytes', options.segmentBytes, 2 ** 40);
  checkPositiveInt('maxTextBytes', options.maxTextBytes, 1024 * 1024 * 1024);
  checkPositiveInt('hitRateProbes', options.hitRateProbes, 4096);
  checkPositiveInt('auditSample', options.auditSample, 1_000_000);
  if (options.segmentBytes !== undefined && options.segmentBytes < 4096) invalid('segmentBytes must be at least 4096');
  const bg = options.backgroundCatchUpAbove;
  checkCountOrInfinity('backgroundCatchUpAbove', bg, 0);
  if (options.onCatchUp !== undefined && typeof options.onCatchUp !== 'function') invalid('onCatchUp must be a function');
  if (options.onProgress !== undefined && typeof options.onProgress !== 'function') invalid('onProgress must be a function');
  return {
    horizonSeconds: options.horizonSeconds ?? DEFAULTS.horizonSeconds,
    rawTtlSeconds: options.rawTtlSeconds ?? Number.POSITIVE_INFINITY,
    bestEffort: options.bestEffort ?? false,
    durability: options.durability ?? DEFAULTS.durability,
    embedder: options.embedder,
    dims: options.dims ?? DEFAULTS.dims,
    auditEvery: options.auditEvery ?? DEFAULTS.auditEvery,
    unknownAfter: options.unknownAfter ?? DEFAULTS.unknownAfter,
    policy: options.policy ?? DEFAULTS.policy,
    maxDivergence: options.maxDivergence ?? DEFAULTS.maxDivergence,
    grounding: options.grounding ?? DEFAULTS.grounding,
    readOnly: options.readOnly ?? false,
    segmentBytes: options.segmentBytes ?? DEFAULTS.segmentBytes,
    maxTextBytes: options.maxTextBytes ?? DEFAULTS.maxTextBytes,
    vectorScalar: options.vectorScalar ?? DEFAULTS.vectorScalar,
    vectorPartitionAbove: pa ?? DEFAULTS.vectorPartitionAbove,
    hitRateProbes: options.hitRateProbes ?? DEFAULTS.hitRateProbes,
    auditSample: options.auditSample ?? DEFAULTS.auditSample,
    matchPolicy: options.matchPolicy ?? DEFAULT_MATCH_POLICY,
    replica: options.replica,
    backgroundCatchUpAbove: bg ?? DEFAULTS.backgroundCatchUpAbove,
    onCatchUp: options.onCatchUp,
    onProgress: options.onProgress,
  };
}

/** Refuses a retention shorter than the horizon unless the store is opened best-effort. */
export function checkRetention(o: Resolved): void {
  if (o.rawTtlSeconds < o.horizonSeconds && !o.bestEffort) {
    throw new SpanguardError(
      ErrorCode.RETENTION_TOO_SHORT,
      `rawTtlSeconds (${o.rawTtlSeconds}) is shorter than horizonSeconds (${o.horizonSeconds}): evicted turns would expire while the session can still ask for them. Raise the TTL, or open with bestEffort: true (the verdict is then never lossless).`,
      { rawTtlSeconds: o.rawTtlSeconds, horizonSeconds: o.horizonSeconds },
    );
  }
}

/**
 * The vector index's options: an exact SIMD scan below 2,500 vectors per namespace, the
 * binary-signature scan with an exact rerank of the nearest max(512, 1/512 of the namespace)
 * above, nearest by the query's 4-bit coordinates against each signature. bench/vector-crossover.bench.ts
 * (real turns, f16, top-10 p50): the binary strategy overtakes the scan between 2,000 and
 * 3,000 vectors. At 10^5 real turns recall@10 against brute force is 0.999 for quotes with
 * a pool of 512 (`npm run bench -- --scale 1e5 --only retrieval`); on 10^6 generated
 * vectors 0.987–0.993 with N/512 (bench/vector-scale.bench.ts), where HNSW at ef 256 gave
 * 0.950 / 0.590 at 10^5 / 10^6; inserts are O(1) (≈ 7 µs a vector at 10^6, where HNSW
 * inserts took ≈ 300 µs).
 */
export function vectorOptions(o: Resolved) {
  return {
    dims: o.dims,
    scalar: o.vectorScalar,
    exactBelow: 2_500,
    ann: 'binary' as const,
    rerankMin: 512,
    rerankShare: 1 / 512,
    partitionAbove: o.vectorPartitionAbove,
    readOnly: o.readOnly,
  };
}
