/** The command line's help texts and each command's options. */
export const HELP: Record<string, string> = {
  main: `spanguard — lossless retrieval guard for long agent transcripts

Usage: spanguard <command> [options]
       spanguard --version

Commands:
  replay <transcript.jsonl[.gz]> --store DIR [--budget N] [--format F] [--questions Q.jsonl]
                         stream a transcript (spanguard turns, chat messages, a Claude
                         Code session or a Codex rollout) through a budgeted context window
  replay --sample        replay the bundled sample (what \`npm start\` runs)
  search DIR "query"     hybrid search (exact + BM25 + vector): who said it, when,
                         what of the query each hit holds, or "not in transcript" and why
  exact DIR "phrase"     every raw span containing the phrase verbatim
  verdict DIR [--explain] the verdict, its reasons and evidence
  audit DIR [--full]     run an audit now (takes the writer lock)
  verify DIR             checksums of every log and index file, log/index agreement
  stats DIR              counts, sizes, SIMD
  report DIR --html out.html  a self-contained HTML report with charts
  mcp --store DIR        serve the store to an agent host over MCP (stdio)

Every command takes --help (-h) and --json. Exit codes: 0 ok, 1 error, 2 usage (also a
file or store named that does not exist), 3 log corruption, 4 a damaged index file or
log/index disagreement, 5 not lossless, 65 malformed input.`,
  replay: `Usage: spanguard replay <transcript.jsonl[.gz]> --store DIR [options]
       spanguard replay --sample [options]

Streams a transcript through a ContextWindow over a SpanStore and prints a report.
The file (plain or gzip; a pipe or a device too) is read a line at a time and checked whole
first: a malformed line — not JSON, not of the format, a line over 64 MiB, a text over
16 MiB, a cut or garbled .gz — exits 65 with its line number, nothing written. Messages
never quote the file.

Options:
  --format F           auto (default) | spanguard | claude-code | codex. auto tells them
                       apart by the first lines. spanguard: JSONL of {turn, role, text}
                       or OpenAI chat messages {role, content}; claude-code: a Claude Code
                       session (~/.claude/projects/*/<session>.jsonl); codex: a Codex CLI
                       rollout (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl). What each
                       keeps and skips: docs/importers.md
  --store DIR          directory to create the store in (must not already hold one);
                       with --sample, a fresh temp directory when omitted
  --budget N           window budget in tokens (default 32000)
  --questions FILE     JSONL of {question, answer, evidence_turns, category?, session?} to ask
                       after the replay through ContextWindow.recall. answer null with
                       evidence_turns [] is a question the transcript does not answer: it
                       counts as an honest miss when recall says "not in transcript".
                       Questions naming another session than the transcript's are skipped,
                       as are those with evidence past its last turn; an evidence turn
                       within its turns that no line holds exits 65.
  --keep-recent N      turns never evicted at the end of the window (default 8)
  --policy P           refuse | spill (default refuse)
  --durability D       sync | group | none (default none: a replay re-reads a transcript that
                       already exists; the log is flushed and fsynced at close)
  --limit N            replay only the first N turns
  --html FILE          also write the HTML report
  --sample             replay the bundled sample (samples/miniswe-slice) and ask its questions
  --json               print the report as JSON`,
  search: `Usage: spanguard search DIR "query" [options]

Each hit: span id, kind, turns, speaker (or role), time (ISO 8601), via, score, then what of
the query it holds: terms matched/asked, values (numbers, identifiers with digits, quoted
parts: ✓ held, ✗ missing, contradicted), names, who said it, the time asked about.
A miss prints: not in transcript (<reason>: <what was looked for>).

Options:
  --k N                hits to return (default 10)
  --kinds raw,summary  namespaces to search (default raw)
  --turns A-B          only spans overlapping turns A..B
  --speaker NAME       only spans said by NAME (a speaker or a role); repeat for several
  --since ISO-DATE     only spans at or after this time (2024-05-01 or 2024-05-01T12:00:00Z)
  --until ISO-DATE     only spans at or before this time (a date alone: through its end, UTC)
  --json               the whole result: hits with their support, miss, missReason, missDetail`,
  exact: `Usage: spanguard exact DIR "phrase" [--limit N] [--json]
Every raw span that contains the phrase verbatim, or "not in transcript".

Options:
  --limit N            at most N spans (default 1000)`,
  verdict: `Usage: spanguard verdict DIR [--explain] [--json]
Exits 5 when the verdict is not lossless.`,
  audit: `Usage: spanguard audit DIR [--full] [--json]
Runs an audit now and records it. Needs the writer lock. Exits 5 when it fails.

Options:
  --full               check 16 times the usual sample of anchors and evicted spans (at least 512)`,
  verify: `Usage: spanguard verify DIR [--remote s3://BUCKET/PREFIX] [--json]
Checks every checksum of every file: each record of every log segment; the lexical index
(header and body CRC, structure); vectors.bin (header and every record's CRC); the vector
snapshots (header and payload CRC); identity.json (which store, log history and file
contents the indexes were built from). Then checks, id by id, that the indexes hold exactly
the log's spans. Read-only: nothing is repaired (a writer's next open rebuilds a damaged index
from the log and records it).
Exit 0: everything checks · 3: log corruption (file and byte offset printed) · 4: an index
file damaged, missing or not this store's, or the indexes disagree with the log.
--remote: also compares the local log with the replica's manifest and every object it names
(size, CRC32C, the local bytes); endpoint and keys from SPANGUARD_S3_ENDPOINT,
SPANGUARD_S3_ACCESS_KEY, SPANGUARD_S3_SECRET_KEY. Exit 6 when they differ.`,
  stats: `Usage: spanguard stats DIR [--json]
Span counts, next id, bytes on disk, passes, evictions, anchors, the SIMD level, index sizes.`,
  report: `Usage: spanguard report DIR --html out.html [--json]
Writes one self-contained HTML page: window tokens against the budget, hit rate and
evictions per pass, the verdict timeline.`,
};

export type OptionSpec = Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;

/** The options each command takes besides --help and --json (every command takes those two). */
export const OPTIONS: Record<string, OptionSpec> = {
  replay: {
    store: { type: 'string' },
    format: { type: 'string' },
    budget: { type: 'string' },
    questions: { type: 'string' },
    'keep-recent': { type: 'string' },
    policy: { type: 'string' },
    durability: { type: 'string' },
    limit: { type: 'string' },
    html: { type: 'string' },
    sample: { type: 'boolean' },
  },
  search: {
    k: { type: 'string' },
    kinds: { type: 'string' },
    turns: { type: 'string' },
    speaker: { type: 'string', multiple: true },
    since: { type: 'string' },
    until: { type: 'string' },
  },
  exact: { limit: { type: 'string' } },
  verdict: { explain: { type: 'boolean' } },
  audit: { full: { type: 'boolean' } },
  verify: { remote: { type: 'string' } },
  stats: {},
  report: { html: { type: 'string' } },
};
