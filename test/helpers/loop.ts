/** Counts turns of the event loop until stopped; `now()` is the current turn's number. */
export function turnCounter(): { now: () => number; stop: () => void } {
  let turn = 0;
  let stopped = false;
  const hop = () => {
    if (stopped) return;
    turn++;
    setImmediate(hop);
  };
  setImmediate(hop);
  return { now: () => turn, stop: () => (stopped = true) };
}

/**
 * Makes `obj[method]` slower: an own property over the prototype's (a native class's methods
 * are read-only there) that calls `seen()`, busy-waits `ms`, then calls the original. Returns
 * the function that removes it.
 */
export function slowMethod(obj: object, method: string, ms: number, seen: () => void): () => void {
  const o = obj as Record<string, (...a: unknown[]) => unknown>;
  const original = o[method]!.bind(obj);
  Object.defineProperty(obj, method, {
    configurable: true,
    value: (...a: unknown[]) => {
      seen();
      const until = performance.now() + ms;
      while (performance.now() < until);
      return original(...a);
    },
  });
  return () => delete o[method];
}
