// The conversation every adapter's agent-loop test runs: facts planted in the first turns,
// filler until 2,000 items, then questions only the evicted first turns answer.

/** Items (turns) each loop reaches before it asks. */
export const ITEMS = 2_000;
/** Tool outputs are real transcript turns cut to this many characters (a window of a few thousand tokens holds several). */
export const FILLER_CHARS = 1_200;

export const FACTS = [
  { statement: 'Constraint: the upstream API allows 40 req/s; never exceed it.', question: 'what rate limit does the upstream API allow?', value: '40 req/s' },
  { statement: 'The staging database password rotates every 17 days; the on-call alias is ops-kestrel-42.', question: 'what is the on-call alias?', value: 'ops-kestrel-42' },
  { statement: 'Decision: we deploy the billing service from branch release/2024.11-hotfix only.', question: 'which branch do we deploy the billing service from?', value: 'release/2024.11-hotfix' },
] as const;
