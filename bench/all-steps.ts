/**
 * The steps of `npm run bench:all` (bench/all.ts): every command whose JSON bench/RESULTS.md
 * renders, at the scale its figures are documented at, in the order they run. Pure: the plan,
 * the argument parsing and the step selection, so they are tested apart from the hours the
 * steps take.
 *
 * Each step builds what it needs itself. The one store two steps share — the 10^6 `repeat`
 * corpus of bench/hybrid-scale.ts, which the stall rows of bench/open-store.ts reopen — lives
 * under the cache directory: `--cache DIR` keeps it there for the next run; without it the
 * runner makes a temporary one and removes it at the end, so the hybrid step builds the store
 * and the stall step reuses it, or builds it itself when it runs alone.
 */

export interface Step {
  /** The name `--only` selects it by. */
  name: string;
  /** What its figures are, in a line. */
  what: string;
  /** The process to run, from the package root: argv[0] is the executable. */
  argv: string[];
  /** The files it writes under bench/results/ (RESULTS.md renders the bench-*.json ones). */
  writes: string[];
}

export interface AllOptions {
  /** Print the steps and their commands, run nothing. */
  list: boolean;
  /** The steps to run, by name, in the plan's order; null: all of them. */
  only: string[] | null;
  /** Where the shared 10^6 store (and the vector steps' indexes) are kept; null: a temporary directory. */
  cache: string | null;
  /** Spans of the stall step's store (10^6 documented; smaller to try the step out). */
  stallSpans: number;
}

/** Node with the flags the bench's own scripts run under. */
const NODE = ['node', '--expose-gc'];
const dist = (file: string) => `build/bench-dist/${file}`;

/** The plan, in the order it runs: the cheap steps first, so a broken build fails in minutes. */
export function planSteps(o: { cache: string; stallSpans: number }): Step[] {
  return [
    {
      name: 'quick',
      what: '10^4 spans, every section at fewer iterations, 20 s load test (the CI smoke run)',
      argv: [...NODE, dist('bench/run.js'), '--quick'],
      writes: ['bench-1e4-quick.json'],
    },
    {
      name: '1e4',
      what: '10^4 spans (design scale), every section with its peers, the 5-minute load test, the growth fit',
      argv: [...NODE, dist('bench/run.js'), '--scale', '1e4'],
      writes: ['bench-1e4.json'],
    },
    {
      name: 'load',
      what: 'the load test alone: 256 group appenders, searches and compactions for 300 s',
      argv: [...NODE, dist('bench/run.js'), '--only', 'load'],
      writes: ['bench-1e4-load.json'],
    },
    {
      name: '1e5',
      what: '10^5 spans: retrieval with its peers (usearch, FTS5, LanceDB)',
      argv: [...NODE, dist('bench/run.js'), '--scale', '1e5', '--only', 'retrieval'],
      writes: ['bench-1e5-retrieval.json'],
    },
    {
      name: '1e5-hybrid',
      what: '10^5 spans (real turns repeated): hybrid store.search per query set, with the time of each stage of a call (--stages)',
      argv: [...NODE, dist('bench/hybrid-scale.js'), '100000', 'repeat', o.cache, '--stages'],
      writes: ['bench-1e5-hybrid.json'],
    },
    {
      name: '1e6-ingest',
      what: '10^6 spans: ingest, memory and disk, then the store open and its event-loop stalls',
      argv: [...NODE, dist('bench/run.js'), '--scale', '1e6', '--only', 'ingest,open'],
      writes: ['bench-1e6-ingest-open.json'],
    },
    {
      name: '1e6-hybrid',
      what: '10^6 spans (real turns repeated): hybrid store.search on natural questions, paraphrases, quotes and queries up to the maximum size; builds the store unless the cache holds it',
      argv: [...NODE, dist('bench/hybrid-scale.js'), '1000000', 'repeat', o.cache],
      writes: ['bench-1e6-hybrid.json'],
    },
    {
      name: 'stalls',
      what: `${o.stallSpans} spans: event-loop stalls of open, repair, rebuild, checkpoint and close on the hybrid step's store (built here when the cache lacks it)`,
      argv: [...NODE, dist('bench/open-store.js'), '--spans', String(o.stallSpans), '--cache', o.cache],
      writes: [`bench-${sciTag(o.stallSpans)}-open-store.json`],
    },
    {
      name: 'vector-1e6',
      what: '10^6 vectors (real turns, then the generator): the vector tier, flat and partitioned, with the probe sweep',
      argv: [...NODE, dist('bench/vector-scale.bench.js'), '--scale', '1e6', '--sweep', '--cache', o.cache],
      writes: ['bench-vector-1e6.json'],
    },
    {
      name: 'vector-1e6-repeat',
      what: '10^6 vectors (real turns repeated with distinct suffixes): the vector tier',
      argv: [...NODE, dist('bench/vector-scale.bench.js'), '--scale', '1e6', '--corpus', 'repeat', '--cache', o.cache],
      writes: ['bench-vector-1e6-repeat.json'],
    },
    {
      name: 'vector-1e7',
      what: '10^7 vectors (generated): the vector tier, with the probe sweep',
      argv: [...NODE, dist('bench/vector-scale.bench.js'), '--scale', '1e7', '--sweep', '--shares', '32', '--cache', o.cache],
      writes: ['bench-vector-1e7.json'],
    },
    {
      name: 'vector-1e7-margins',
      what: '10^7 vectors (generated): the partitioned search with its cap at 1/16, 1/8, 1/6 and 1/4 of the rows',
      argv: [...NODE, dist('bench/vector-scale.bench.js'), '--scale', '1e7', '--margins', 'inf:16,inf:8,inf:6,inf:4', '--cache', o.cache],
      writes: ['bench-vector-1e7-margins.json'],
    },
    {
      name: 'vector-1e6-margins',
      what: '10^6 vectors (real turns, then the generator): the partitioned search with probeMargin and its caps',
      argv: [...NODE, dist('bench/vector-scale.bench.js'), '--scale', '1e6', '--margins', '0.15:16,0.2:8,0.3:8,0.3:4,inf:8:16384,0.2:8:16384', '--cache', o.cache],
      writes: ['bench-vector-1e6-margins.json'],
    },
    {
      name: 'vector-1e6-topics',
      what: '10^6 vectors (spans about one of 2,000 generated topics): the partitioned search with probeMargin and its caps',
      argv: [...NODE, dist('bench/vector-scale.bench.js'), '--scale', '1e6', '--margins', '0.1:16,0.15:16,0.2:16,0.2:8,0.3:8,0.3:4,inf:16:16384,0.2:8:16384,inf:8:16384', '--corpus', 'topics', '--cache', o.cache],
      writes: ['bench-vector-1e6-topics-margins.json'],
    },
    {
      name: 'vector-1e7-topics',
      what: '10^7 vectors (topical corpus): the partitioned search with probeMargin, 100 queries per set',
      argv: [...NODE, dist('bench/vector-scale.bench.js'), '--scale', '1e7', '--queries', '100', '--margins', '0.2:8,0.3:4,inf:8', '--corpus', 'topics', '--cache', o.cache],
      writes: ['bench-vector-1e7-topics-margins.json'],
    },
    {
      name: 'quality',
      what: 'retrieval quality on whole transcripts: verbatim questions, honest misses, natural questions with FTS5 and MiniSearch',
      argv: ['node', dist('eval/quality.js')],
      writes: ['quality-exchange.json', 'natural.json'],
    },
    {
      name: 'results',
      what: 'bench/RESULTS.md rewritten from every JSON in bench/results/',
      argv: ['node', dist('bench/results.js')],
      writes: [],
    },
  ];
}

/** 10^k as the bench's file names write it (`1e6`); other counts rounded to a power of ten, as bench/open-store.ts names its file. */
export function sciTag(n: number): string {
  const scale = 10 ** Math.round(Math.log10(Math.max(1, n)));
  return scale.toExponential(0).replace('+', '');
}

/** The command line a step runs, as --list prints it. */
export function commandOf(s: Step): string {
  return s.argv.map((a) => (/^[\w./:=,@+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** The steps `only` names, in the plan's order (not the list's); an unknown name throws, naming the known ones. */
export function selectSteps(plan: readonly Step[], only: readonly string[] | null): Step[] {
  if (only === null) return [...plan];
  const names = new Set(plan.map((s) => s.name));
  const unknown = only.filter((n) => !names.has(n));
  if (unknown.length > 0) throw new Error(`--only: ${unknown.join(', ')} ${unknown.length === 1 ? 'is not a step' : 'are not steps'}; the steps: ${[...names].join(', ')}`);
  if (only.length === 0) throw new Error('--only: no step named');
  const wanted = new Set(only);
  return plan.filter((s) => wanted.has(s.name));
}

/** `--list`, `--only a,b`, `--cache DIR`, `--stall-spans N` (both `--x v` and `--x=v`). */
export function parseAllArgs(argv: readonly string[]): AllOptions {
  const o: AllOptions = { list: false, only: null, cache: null, stallSpans: 1e6 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const flag = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    const value = (): string => {
      if (a.startsWith('--') && eq > 0) return a.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`${flag}: a value is needed`);
      return v;
    };
    switch (flag) {
      case '--list':
        if (eq > 0) throw new Error('--list takes no value');
        o.list = true;
        break;
      case '--only':
        o.only = value()
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
        break;
      case '--cache':
        o.cache = value();
        break;
      case '--stall-spans': {
        const v = value();
        const n = Number(v);
        if (!Number.isInteger(n) || n < 2000 || n > 1e7) throw new Error(`--stall-spans: ${v} is not a span count between 2000 and 1e7`);
        o.stallSpans = n;
        break;
      }
      default:
        throw new Error(`${a}: not an option (--list, --only a,b, --cache DIR, --stall-spans N)`);
    }
  }
  return o;
}

/**
 * Whether a step's end stops the run: it was interrupted (SIGINT or SIGTERM, or the exit code
 * 128 + its number that a process handling the signal exits with). The runner's own handler
 * cannot see a Ctrl-C while a step runs (the step runs synchronously), but the step gets the
 * same signal from the terminal.
 */
export function interruptedBy(r: { status: number | null; signal: string | null }): boolean {
  return r.signal === 'SIGINT' || r.signal === 'SIGTERM' || r.status === 130 || r.status === 143;
}
