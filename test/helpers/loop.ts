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
