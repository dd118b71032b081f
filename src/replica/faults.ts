/**
 * A fault-injecting {@link ObjectStore} wrapper: the failures an object store gives in
 * production — timeouts, 5xx, throttling, a full bucket, a response lost after the server
 * applied the write — on chosen calls, so a host (and the tests) can check that nothing is
 * reported replicated before its PUT succeeded and that retries recover.
 */
import { ObjectStoreError, type ObjectStore, type PutCondition } from './object-store.js';

export type FaultKind =
  /** The call hangs `delayMs`, then fails as a client timeout (not applied). */
  | 'timeout'
  /** 503 Service Unavailable (not applied). */
  | '5xx'
  /** 503 SlowDown (not applied). */
  | 'throttle'
  /** A full bucket / quota exceeded (not applied). */
  | 'full'
  /** The server applies the call, then the response is lost (a timeout to the caller). */
  | 'lost-response';

export interface FaultPlan {
  kind: FaultKind;
  /** How many matching calls fail (default 1; Infinity until cleared). */
  count?: number;
  /** Which calls: `put` (default), `get`, `delete`, `list`, or any. */
  op?: 'put' | 'get' | 'delete' | 'list' | 'any';
  /** Only keys containing this. */
  keyIncludes?: string;
  /** For `timeout`: how long the call hangs first (default 20 ms). */
  delayMs?: number;
}

export class FaultyObjectStore implements ObjectStore {
  private plans: (FaultPlan & { left: number })[] = [];
  /** Calls that reached the inner store, and failures injected. */
  readonly counts = { put: 0, get: 0, delete: 0, list: 0, injected: 0 };
  /** Keys of PUTs the inner store applied, in order. */
  readonly applied: string[] = [];

  constructor(readonly inner: ObjectStore) {}

  inject(plan: FaultPlan): void {
    this.plans.push({ ...plan, left: plan.count ?? 1 });
  }

  clear(): void {
    this.plans = [];
  }

  private async fault(op: 'put' | 'get' | 'delete' | 'list', key: string): Promise<FaultPlan | null> {
    const p = this.plans.find(
      (x) => x.left > 0 && ((x.op ?? 'put') === op || x.op === 'any') && (x.keyIncludes === undefined || key.includes(x.keyIncludes)),
    );
    if (!p) return null;
    p.left--;
    this.counts.injected++;
    if (p.kind === 'lost-response') return p;
    if (p.kind === 'timeout') {
      await new Promise((r) => setTimeout(r, p.delayMs ?? 20));
      throw new ObjectStoreError('transient', `injected: request timed out`);
    }
    if (p.kind === '5xx') throw new ObjectStoreError('transient', 'injected: ServiceUnavailable (HTTP 503)', 503);
    if (p.kind === 'throttle') throw new ObjectStoreError('transient', 'injected: SlowDown (HTTP 503)', 503);
    throw new ObjectStoreError('transient', 'injected: QuotaExceeded (HTTP 403)', 403);
  }

  async get(key: string) {
    const f = await this.fault('get', key);
    this.counts.get++;
    const out = await this.inner.get(key);
    if (f) throw new ObjectStoreError('transient', 'injected: response lost');
    return out;
  }

  async getRange(key: string, from: number, to: number) {
    const f = await this.fault('get', key);
    this.counts.get++;
    const out = this.inner.getRange ? await this.inner.getRange(key, from, to) : ((await this.inner.get(key))?.body.subarray(from, to) ?? null);
    if (f) throw new ObjectStoreError('transient', 'injected: response lost');
    return out;
  }

  async put(key: string, body: Uint8Array, condition?: PutCondition) {
    const f = await this.fault('put', key);
    this.counts.put++;
    const out = await this.inner.put(key, body, condition);
    this.applied.push(key);
    if (f) throw new ObjectStoreError('transient', 'injected: response lost after the PUT was applied');
    return out;
  }

  async delete(key: string) {
    const f = await this.fault('delete', key);
    this.counts.delete++;
    await this.inner.delete(key);
    if (f) throw new ObjectStoreError('transient', 'injected: response lost');
  }

  async list(prefix: string) {
    const f = await this.fault('list', prefix);
    this.counts.list++;
    const out = await this.inner.list(prefix);
    if (f) throw new ObjectStoreError('transient', 'injected: response lost');
    return out;
  }
}
