// The command line, driven as a user would: spawned processes, real files.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { realTurns, tmpDir } from '../helpers/data.js';

const CLI = path.resolve('dist/cli.js');
const run = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });

let dir: string;
let transcript: string;
let replayOut: ReturnType<typeof run>;

beforeAll(() => {
  const work = tmpDir('spanguard-cli-');
  transcript = path.join(work, 'turns.jsonl');
  fs.writeFileSync(transcript, realTurns(400).map((t) => JSON.stringify({ turn: t.turn, role: t.role, text: t.text, kind: t.kind })).join('\n') + '\n');
  dir = path.join(work, 'store');
  replayOut = run('replay', transcript, '--store', dir, '--budget', '4000', '--json');
});

describe('spanguard replay streams a transcript and reports', () => {
  it('exits 0 with a JSON report', () => {
    expect(replayOut.stderr).toBe('');
    expect(replayOut.status).toBe(0);
    const r = JSON.parse(replayOut.stdout);
    expect(r.turns).toBe(400);
    expect(r.passes).toBeGreaterThan(0);
    expect(r.verdict.state).toBe('lossless');
  });
  it('--help works on every command', () => {
    for (const cmd of ['replay', 'search', 'exact', 'verdict', 'audit', 'verify', 'stats', 'report']) {
      const r = run(cmd, '--help');
      expect(r.status, cmd).toBe(0);
      expect(r.stdout, cmd).toMatch(/Usage: spanguard/);
    }
  });
});

describe('spanguard search, exact, verdict, verify, stats, report on the result', () => {
  it('exact finds a phrase of turn 2 verbatim', () => {
    const line = realTurns(2)[1]!.text.split('\n').find((l) => l.trim().length > 20)!.trim();
    const r = run('exact', dir, line, '--json');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.hits.some((h: { turnStart: number }) => h.turnStart === 2)).toBe(true);
  });
  it('search answers with provenance, and misses honestly', () => {
    const hit = JSON.parse(run('search', dir, realTurns(2)[1]!.text.slice(0, 200), '--json').stdout);
    expect(hit.miss).toBe(false);
    expect(hit.hits[0]).toHaveProperty('spanId');
    expect(hit.hits[0]).toHaveProperty('via');
    const miss = run('search', dir, 'the staging cluster quota is 7731 pods per namespace');
    expect(miss.stdout).toMatch(/not in transcript/);
  });
  it('verdict --explain exits 0 for lossless and lists evidence', () => {
    const r = run('verdict', dir, '--explain');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/verdict: lossless/);
    expect(r.stdout).toMatch(/event trail/);
  });
  it('verify exits 0 on a clean store; stats prints counts; report writes HTML', () => {
    expect(run('verify', dir).status).toBe(0);
    expect(JSON.parse(run('stats', dir, '--json').stdout).spans.raw).toBe(400);
    const html = path.join(dir, '..', 'report.html');
    expect(run('report', dir, '--html', html).status).toBe(0);
    expect(fs.readFileSync(html, 'utf8')).toMatch(/<svg/);
  });
});

describe('spanguard search shows who said each hit, when, and what of the query it holds', () => {
  it('prints the role, an ISO time and a support summary on each hit', () => {
    const r = run('search', dir, 'did the user say 16 skipped in 0.16s?', '--k', '2');
    expect(r.status).toBe(0);
    const head = r.stdout.split('\n')[0]!;
    expect(head).toMatch(/^span \d+ raw turns \d+–\d+ · (user|assistant|system|tool) · \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z · via \w+ · score /);
    expect(r.stdout).toMatch(/^ {2}terms \d+\/\d+ · values ✓ 16, 0\.16s · said by user · holds the claim$/m);
  });
  it('--json prints the whole result, support included', () => {
    const out = JSON.parse(run('search', dir, 'did the user say 16 skipped in 0.16s?', '--json').stdout);
    expect(out).toHaveProperty('trustExactRecall');
    const hit = out.hits[0];
    expect(hit.role).toBe('user');
    expect(typeof hit.timestamp).toBe('number');
    expect(hit.support.terms.matched.length).toBeGreaterThan(0);
    expect(hit.support.values).toMatchObject({ matched: ['16', '0.16s'], missing: [], contradicted: false });
    expect(hit.support.speaker).toMatchObject({ said: 'user', match: true });
  });
  it('says what lossless means, and never that answers can be trusted', () => {
    const r = run('search', dir, 'what did pytest astropy/io/ascii/tests/test_html.py print?');
    expect(r.stdout).toMatch(/verdict lossless: every evicted turn is kept verbatim/);
    expect(r.stdout).toMatch(/not that a hit answers a question/);
    const ours = r.stdout.split('\n').filter((l) => /^(verdict|not in transcript|span \d|  terms)/.test(l));
    expect(ours.join('\n')).not.toMatch(/trust/i);
  });
});

describe('a search miss prints its reason', () => {
  it('not in transcript (<reason>: <what was looked for>)', () => {
    const r = run('search', dir, 'the staging cluster quota is 7731 pods per namespace');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^not in transcript \(value-not-stated: the staging cluster quota is 7731 pods per namespace\)$/m);
    const named = run('search', dir, 'Which Vagrant box do we use to test astropy?');
    expect(named.stdout).toMatch(/^not in transcript \(name-not-stated: vagrant\)$/im);
    const json = JSON.parse(run('search', dir, 'the staging cluster quota is 7731 pods per namespace', '--json').stdout);
    expect(json).toMatchObject({ miss: true, hits: [], missReason: 'value-not-stated' });
  });
});

describe('search --speaker, --since and --until limit the spans searched', () => {
  it('--speaker keeps only that role or speaker', () => {
    const out = JSON.parse(run('search', dir, 'astropy html test', '--speaker', 'assistant', '--k', '5', '--json').stdout);
    expect(out.hits.length).toBeGreaterThan(0);
    expect(out.hits.every((h: { role: string }) => h.role === 'assistant')).toBe(true);
  });
  it('--since/--until select by time, and a miss names the filter', () => {
    const now = new Date().toISOString().slice(0, 10);
    const within = JSON.parse(run('search', dir, 'astropy html test', '--since', '2000-01-01', '--until', now, '--json').stdout);
    expect(within.hits.length).toBeGreaterThan(0);
    const future = run('search', dir, 'astropy html test', '--since', '2999-01-01');
    expect(future.stdout).toMatch(/^not in transcript \(no-candidates\) — among spans since 2999-01-01 only$/m);
  });
  it('a malformed date or an empty window is a usage error (exit 2)', () => {
    expect(run('search', dir, 'x', '--since', '2024-13-01').status).toBe(2);
    expect(run('search', dir, 'x', '--since', 'yesterday').status).toBe(2);
    expect(run('search', dir, 'x', '--since', '2024-05-02', '--until', '2024-05-01').status).toBe(2);
  });
});

describe('replay --questions: a question with answer null is answered by "not in transcript"', () => {
  let out: ReturnType<typeof run>;
  let report: {
    questions: {
      total: number;
      answerable: { total: number; evidenceFound: number; falseMisses: number };
      notInTranscript: { total: number; honestMisses: number };
    };
    questionsSkipped: { otherSession: number; pastLastTurn: number };
  };
  beforeAll(() => {
    const work = tmpDir('spanguard-questions-');
    const turns = path.join(work, 'turns.jsonl');
    fs.writeFileSync(
      turns,
      realTurns(400)
        .map((t) => JSON.stringify({ session: 'miniswe-all', turn: t.turn, role: t.role, text: t.text, kind: t.kind }))
        .join('\n') + '\n',
    );
    const questions = path.join(work, 'questions.jsonl');
    const q = (o: object) => JSON.stringify(o);
    fs.writeFileSync(
      questions,
      [
        q({
          question: 'In episode astropy__astropy-13453, what test-summary line did the command `pytest astropy/io/ascii/tests/test_html.py` print?',
          answer: '======================== 9 passed, 16 skipped in 0.16s =========================',
          evidence_turns: [332],
        }),
        // Labelled answerable, but the value it asks about is stated nowhere: a false miss.
        q({ question: 'Did the astropy dev server listen on port 8123?', answer: '8123', evidence_turns: [5] }),
        q({ session: 'miniswe-all', question: 'What TCP port does the BookMinder MCP server listen on?', answer: null, evidence_turns: [], answerable: false, category: 'never-stated' }),
        q({ question: 'Which Vagrant box do we use to test astropy on a clean macOS?', answer: null, evidence_turns: [] }),
        q({ session: 'bookminder-all', question: 'Which Vagrant box do we use?', answer: null, evidence_turns: [] }),
        q({ question: 'What was printed at turn 9000?', answer: 'x', evidence_turns: [9000] }),
      ].join('\n') + '\n',
    );
    const store = path.join(work, 'store');
    out = run('replay', turns, '--store', store, '--budget', '4000', '--questions', questions);
    report = { ...JSON.parse(fs.readFileSync(path.join(store, 'replay-report.json'), 'utf8')) };
    const json = run('replay', turns, '--store', path.join(work, 'store2'), '--budget', '4000', '--questions', questions, '--json');
    report.questionsSkipped = JSON.parse(json.stdout).questionsSkipped;
  });
  it('exits 0 and counts questions the transcript does not answer apart', () => {
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    expect(report.questions.total).toBe(4);
    expect(report.questions.notInTranscript).toEqual({ total: 2, honestMisses: 2 });
    expect(report.questions.answerable).toMatchObject({ total: 2, evidenceFound: 1, falseMisses: 1 });
    expect(report.questionsSkipped).toEqual({ otherSession: 1, pastLastTurn: 1 });
  });
  it('reports honest misses and false misses in words', () => {
    expect(out.stdout).toMatch(/questions +4 asked: 2 answerable, 2 not in transcript/);
    expect(out.stdout).toMatch(/not in transcript: 2 of 2 answered as not in transcript \(honest misses\)/);
    expect(out.stdout).toMatch(/false misses +1\/2 answerable/);
    expect(out.stdout).toMatch(/said not in transcript for a question that was answered in turn 5: "Did the astropy dev server listen on port 8123\?"/);
    expect(out.stdout).toMatch(/skipped +1 about another session, 1 with evidence past the last turn/);
  });
});

describe('a malformed questions line exits 65 naming the line, without quoting it', () => {
  const good = JSON.stringify({ question: 'q?', answer: null, evidence_turns: [] });
  it.each([
    ['answer null but evidence given', JSON.stringify({ question: 'SECRET-QUESTION?', answer: null, evidence_turns: [12] }), /"answer" is null but "evidence_turns" is not empty/],
    ['evidence not an array of integers', JSON.stringify({ question: 'SECRET-QUESTION?', answer: 'SECRET-ANSWER', evidence_turns: ['12'] }), /"evidence_turns" must be an array of non-negative integers/],
    ['evidence a fraction', JSON.stringify({ question: 'SECRET-QUESTION?', answer: 'SECRET-ANSWER', evidence_turns: [1.5] }), /"evidence_turns" must be an array/],
    ['answer given without evidence', JSON.stringify({ question: 'SECRET-QUESTION?', answer: 'SECRET-ANSWER', evidence_turns: [] }), /"answer" is given but "evidence_turns" is empty/],
    ['not JSON', '{"question": "SECRET-QUESTION?", "answer": SECRET-ANSWER}', /not valid JSON/],
  ])('%s', (_what, line, why) => {
    const work = tmpDir('spanguard-badq-');
    const questions = path.join(work, 'q.jsonl');
    fs.writeFileSync(questions, `${good}\n\n${line}\n`);
    const store = path.join(work, 'store');
    const r = run('replay', transcript, '--store', store, '--budget', '4000', '--questions', questions);
    expect(r.status).toBe(65);
    expect(r.stderr).toMatch(/questions line 3: /);
    expect(r.stderr).toMatch(why);
    expect(r.stderr).not.toMatch(/SECRET/);
    expect(fs.existsSync(path.join(store, 'log'))).toBe(false);
  });
});

describe('a corrupted store makes verify fail with the file and offset', () => {
  it('exits 3 and names the segment and byte offset', () => {
    const copy = tmpDir('spanguard-corrupt-');
    fs.cpSync(dir, copy, { recursive: true });
    const seg = fs.readdirSync(path.join(copy, 'log')).filter((f) => f.startsWith('seg-')).sort()[0]!;
    const file = path.join(copy, 'log', seg);
    const bytes = fs.readFileSync(file);
    const at = Math.floor(bytes.length / 3);
    bytes[at] = bytes[at]! ^ 0x40;
    fs.writeFileSync(file, bytes);
    const r = run('verify', copy);
    expect(r.status).toBe(3);
    expect(r.stdout + r.stderr).toContain(seg);
    expect(r.stdout + r.stderr).toMatch(/offset[ =]\d+/);
  });
});

describe('malformed input lines are reported with their numbers, nothing written', () => {
  it('exits 65 naming the line, and leaves no store behind', () => {
    const work = tmpDir('spanguard-bad-');
    const bad = path.join(work, 'bad.jsonl');
    fs.writeFileSync(bad, '{"turn":1,"role":"user","text":"ok"}\n{"turn":2,"role":"user","text":"ok"}\n{"turn":3,"role":\n');
    const store = path.join(work, 'store');
    const r = run('replay', bad, '--store', store, '--budget', '1000');
    expect(r.status).toBe(65);
    expect(r.stderr).toMatch(/line 3/);
    expect(fs.existsSync(path.join(store, 'log'))).toBe(false);
  });
  it('unknown commands and bad options are usage errors (exit 2)', () => {
    expect(run('frobnicate').status).toBe(2);
    expect(run('search').status).toBe(2);
    expect(run('replay', transcript, '--store', tmpDir(), '--budget', 'many').status).toBe(2);
  });
});

describe('--version and -v print the package version', () => {
  it('prints the version of the package.json beside dist/ and exits 0', () => {
    const { version } = JSON.parse(fs.readFileSync(path.resolve('package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const r = run(flag);
      expect(r.status, flag).toBe(0);
      expect(r.stdout, flag).toBe(`${version}\n`);
    }
    expect(run('--help').stdout).toMatch(/spanguard --version/);
  });
});

describe('every --help lists exactly the options its command takes', () => {
  const flags = (text: string) => new Set([...text.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]!));
  it('the options in each help are the options the command parses, plus --json', async () => {
    const { OPTIONS } = await import('../../src/cli.js');
    for (const [cmd, spec] of Object.entries(OPTIONS)) {
      const r = run(cmd, '--help');
      expect(r.status, cmd).toBe(0);
      const listed = flags(r.stdout);
      listed.delete('help');
      expect([...listed].sort(), cmd).toEqual([...Object.keys(spec), 'json'].sort());
    }
  });
  it('each option a help lists is accepted (no "Unknown option")', async () => {
    const { OPTIONS } = await import('../../src/cli.js');
    for (const [cmd, spec] of Object.entries(OPTIONS)) {
      const args = Object.entries(spec).flatMap(([name, o]) => (o.type === 'string' ? [`--${name}`, '1'] : [`--${name}`]));
      const r = run(cmd, ...args, '--json', '--help');
      expect(r.stderr, cmd).toBe('');
      expect(r.status, cmd).toBe(0);
    }
    expect(run('replay', '--append', '--help').status).toBe(2);
  });
  it('the main help names every command', async () => {
    const { OPTIONS } = await import('../../src/cli.js');
    const main = run('--help').stdout;
    for (const cmd of Object.keys(OPTIONS)) expect(main, cmd).toMatch(new RegExp(`^  ${cmd} `, 'm'));
  });
});

describe('a missing or unreadable input prints one line, no stack trace', () => {
  const oneLine = (r: ReturnType<typeof run>) => {
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/^\s+at /m);
  };
  it('a transcript or questions file that does not exist: exit 2, nothing written', () => {
    const work = tmpDir('spanguard-missing-');
    const store = path.join(work, 'store');
    const r = run('replay', path.join(work, 'nope.jsonl'), '--store', store);
    expect(r.status).toBe(2);
    oneLine(r);
    expect(r.stderr).toMatch(/^spanguard replay: transcript .*nope\.jsonl does not exist$/m);
    const q = run('replay', transcript, '--store', store, '--questions', path.join(work, 'q.jsonl'));
    expect(q.status).toBe(2);
    oneLine(q);
    expect(q.stderr).toMatch(/questions file .*q\.jsonl does not exist/);
    expect(fs.existsSync(store)).toBe(false);
  });
  it('a store directory that does not exist: exit 2 for every command, and audit does not create it', () => {
    const missing = path.join(tmpDir('spanguard-nostore-'), 'nope');
    for (const args of [['search', missing, 'x'], ['exact', missing, 'x'], ['verdict', missing], ['audit', missing], ['verify', missing], ['stats', missing], ['report', missing, '--html', `${missing}.html`]]) {
      const r = run(...args);
      expect(r.status, args[0]).toBe(2);
      oneLine(r);
      expect(r.stderr, args[0]).toBe(`spanguard ${args[0]}: ${missing} does not exist\n`);
    }
    expect(fs.existsSync(missing)).toBe(false);
  });
  it('a .gz that is not gzip is malformed input (exit 65); an unwritable --html is an error (exit 1)', () => {
    const work = tmpDir('spanguard-badgz-');
    const gz = path.join(work, 'turns.jsonl.gz');
    fs.writeFileSync(gz, Buffer.from([0x1f, 0x8b, 0, 1, 2, 3]));
    const r = run('replay', gz, '--store', path.join(work, 'store'));
    expect(r.status).toBe(65);
    oneLine(r);
    const html = run('report', dir, '--html', path.join(work, 'no', 'such', 'dir', 'r.html'));
    expect(html.status).toBe(1);
    oneLine(html);
    expect(html.stderr).toMatch(/^spanguard report: ENOENT/);
  });
});

describe('error messages name the command once', () => {
  it('usage errors are prefixed "spanguard <command>:" and nothing more', () => {
    const cases: [string[], RegExp][] = [
      [['search'], /^spanguard search: missing DIR$/m],
      [['search', dir], /^spanguard search: missing the query$/m],
      [['exact', dir], /^spanguard exact: missing the phrase$/m],
      [['verdict'], /^spanguard verdict: missing DIR$/m],
      [['replay'], /^spanguard replay: missing the transcript file$/m],
      [['replay', transcript], /^spanguard replay: --store DIR is required$/m],
      [['report', dir], /^spanguard report: --html out\.html is required$/m],
      [['search', dir, 'x', '--kinds', 'everything'], /^spanguard search: --kinds takes raw, summary or raw,summary/m],
    ];
    for (const [args, line] of cases) {
      const r = run(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(line);
      expect(r.stderr, args.join(' ')).not.toMatch(/^spanguard (\w+): \1:/m);
    }
  });
});

describe('replay --sample (npm start) says what it replayed, what the figures mean, and how to explore the store', () => {
  it('names the sample, turns and budget, explains the hit rate, and prints commands that work on the store it left', () => {
    const r = run('replay', '--sample', '--limit', '300', '--budget', '4000');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^replayed the bundled sample samples\/miniswe-slice: 300 turns of a real SWE-bench/m);
    expect(r.stdout).toMatch(/through a context window of 4000 tokens that keeps the last 8 turns/);
    for (const figure of ['passes', 'anchors', 'refused', 'spilled', 'audits', 'hit rate']) expect(r.stdout).toMatch(new RegExp(`^  ${figure} `, 'm'));
    expect(r.stdout).toMatch(/0\.500 is the healthy value, not a 50% failure/);
    const store = /^store +(\S+)$/m.exec(r.stdout)![1]!;
    expect(fs.existsSync(path.join(store, 'log'))).toBe(true);
    const explore = r.stdout.slice(r.stdout.indexOf('explore the store'));
    // In this clone npx cannot find the package's own bin: the commands name dist/cli.js.
    for (const cmd of ['search', 'verdict', 'stats']) expect(explore).toContain(`node dist/cli.js ${cmd} ${store}`);
    const statsLine = explore.split('\n').find((l) => l.includes('dist/cli.js stats'))!;
    const stats = run(...statsLine.trim().split(/\s+/).slice(2), '--json');
    expect(stats.status, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout).spans.raw).toBe(300);
    fs.rmSync(store, { recursive: true, force: true });
  });
});
