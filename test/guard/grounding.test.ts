// Summary grounding (src/grounding.ts): a summary may not state a value its sources do not.
// One describe per rule; the last runs the default summarizer over real turns.
import { afterAll, describe, expect, it } from 'vitest';
import { checkGrounding, summaryValues } from '../../src/grounding.js';
import { profileQuery } from '../../src/match.js';
import { SpanStore } from '../../src/store.js';
import { ContextWindow, extractiveSummary, type SummarizeInput } from '../../src/window.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const SOURCES = [
  'The upstream API enforces a rate limit of 40 req/s per key; bursts above that get HTTP 429.',
  'Pinned requests v4.5.0 in requirements.txt. The config lives in config/limits.yaml, read by `load_limits()`.',
  'Traceback: ValueError: "Connection refused by upstream" raised in net/client.py line 212',
];

const span = (turn: number, text: string, role = 'assistant', anchor = false): SummarizeInput => ({ spanId: turn, kind: 'raw', role, turnStart: turn, turnEnd: turn, text, anchor });

describe('rule: a summary that restates its sources is grounded', () => {
  it('numbers with units, versions, paths, identifiers and quoted strings as the sources state them', () => {
    const summary =
      'Rate limit 40 req/s (HTTP 429 above it). requests v4.5.0 pinned in requirements.txt; limits in config/limits.yaml via `load_limits()`. ' +
      'A ValueError "Connection refused by upstream" came from net/client.py line 212.';
    const r = checkGrounding(summary, SOURCES);
    expect(r.ungrounded).toEqual([]);
    expect(r.grounded).toBe(true);
    expect(r.values).toEqual(expect.arrayContaining(['40', 'req/s', '429', 'v4.5.0', 'requirements.txt', 'config/limits.yaml', 'load_limits()', 'ValueError', 'Connection refused by upstream', 'net/client.py', '212']));
  });

  it('a value needs only one source that states it', () => {
    expect(checkGrounding('limit 40 req/s, requests v4.5.0', SOURCES).grounded).toBe(true);
  });
});

describe('rule: a value the sources do not state is ungrounded', () => {
  it('a shifted number: 40 → 45 req/s', () => {
    const r = checkGrounding('The API allows 45 req/s.', SOURCES);
    expect(r.grounded).toBe(false);
    expect(r.ungrounded).toEqual(['45']);
  });

  it('a changed version: v4.5.0 → v4.6.0', () => {
    expect(checkGrounding('requests v4.6.0 is pinned', SOURCES).ungrounded).toEqual(['v4.6.0']);
  });

  it('a changed path', () => {
    expect(checkGrounding('limits are in config/limit.yaml', SOURCES).ungrounded).toEqual(['config/limit.yaml']);
    expect(checkGrounding('the error came from net/server.py', SOURCES).ungrounded).toEqual(['net/server.py']);
  });

  it('a changed quoted string, backticked or double-quoted', () => {
    expect(checkGrounding('the error said "Connection refused by the upstream"', SOURCES).ungrounded).toEqual(['Connection refused by the upstream']);
    // The quoted part, and the identifier inside it.
    expect(checkGrounding('limits come from `load_limit()`', SOURCES).ungrounded).toEqual(['load_limit', 'load_limit()']);
  });

  it('a changed identifier with digits, and one without', () => {
    expect(checkGrounding('HTTP 428 above the limit', SOURCES).grounded).toBe(false);
    expect(checkGrounding('a KeyError was raised', SOURCES).ungrounded).toEqual(['KeyError']);
    expect(checkGrounding('cast to float16', ['cast to float32']).ungrounded).toEqual(['float16']);
  });

  it('lists every ungrounded value, each once, in the order the summary states them', () => {
    const r = checkGrounding('limit 45 req/s, requests v4.6.0, limit 45 req/s again, config/limits.yaml', SOURCES);
    expect(r.ungrounded).toEqual(['45', 'v4.6.0']);
  });
});

describe('rule: values match bounded (40 is not 140, 40.5 or float40)', () => {
  it.each([
    ['140 req/s', false],
    ['40.5 req/s', false],
    ['float40 req/s', false],
    ['x40 req/s', false],
    ['40 req/s', true],
    ['(40) req/s', true],
    ['limit=40, req/s', true],
  ])('source %j grounds "40 req/s": %s', (source, grounded) => {
    expect(checkGrounding('40 req/s', [source]).grounded).toBe(grounded);
  });

  it('the other way round: 140 is not grounded by 40, nor 4 by 40', () => {
    expect(checkGrounding('140 req/s', ['40 req/s']).grounded).toBe(false);
    expect(checkGrounding('4 req/s', ['40 req/s']).grounded).toBe(false);
  });

  it('identifiers too: self.mask is not self.masked, nor utf-8 utf-16', () => {
    expect(checkGrounding('reads self.mask', ['return self.masked']).grounded).toBe(false);
    expect(checkGrounding('reads self.mask', ['return self.mask & 1']).grounded).toBe(true);
    expect(checkGrounding('decoded as utf-8', ['decoded as utf-16']).grounded).toBe(false);
  });

  it('a sign or a percent sign is part of the value', () => {
    expect(checkGrounding('returned -1', ['returned 1']).grounded).toBe(false);
    expect(checkGrounding('coverage 95%', ['coverage 95 files']).grounded).toBe(false);
    expect(checkGrounding('coverage 95%', ['coverage: 95%']).grounded).toBe(true);
  });

  it('agrees with match.ts value test on where a value is bounded', () => {
    const values = ['40', '3.5ms', 'float16', 'utf-8', 'self.mask', '-1', '300%', 'v2.26.2'];
    const around = ['', ' ', 'x', '1', '.', '-', '_', '1.', '.1', '(', ')', 'a.', '/', ':'];
    for (const v of values) {
      const test = profileQuery(v).tests.get(v)!;
      for (const before of around)
        for (const after of around) {
          const source = `${before}${v}${after}`;
          // The value alone in the summary (no word beside it), so only the bounds decide.
          expect([v, source, checkGrounding(v, [source]).grounded]).toEqual([v, source, test.test(source.toLowerCase())]);
        }
    }
  });
});

describe('rule: a v before a dotted version is notation', () => {
  it('v2.26.2 and 2.26.2 ground each other; 2.26.3 neither', () => {
    expect(checkGrounding('upgraded to v2.26.2', ['bump requests to 2.26.2']).grounded).toBe(true);
    expect(checkGrounding('upgraded to 2.26.2', ['tag v2.26.2 pushed']).grounded).toBe(true);
    expect(checkGrounding('upgraded to v2.26.3', ['bump requests to 2.26.2']).grounded).toBe(false);
    expect(checkGrounding('upgraded to 2.26.2', ['tag xv2.26.2']).grounded).toBe(false);
    expect(checkGrounding('upgraded to 2.26.2', ['tag 12.26.2']).grounded).toBe(false);
  });
});

describe('rule: values are compared as the summary spells them (case-sensitive)', () => {
  it('an identifier with its case changed is another identifier', () => {
    expect(checkGrounding('set MAX_RETRIES', ['max_retries = 5']).ungrounded).toEqual(['MAX_RETRIES']);
    expect(checkGrounding('see README.md', ['cat readme.md']).ungrounded).toEqual(['README.md']);
    expect(checkGrounding('a valueError', ['ValueError: bad']).grounded).toBe(false);
  });

  it('a camelCase identifier restated in lower case is a plain word, not a value', () => {
    expect(summaryValues('ValueError, then valueerror')).toEqual(['ValueError']);
  });
});

describe('rule: a number stands beside one of its words, as in the summary', () => {
  it('"rate limit 45 req/s" is not grounded by a 45 that stands elsewhere', () => {
    const sources = ['rate limit 40 req/s', 'the build took 45 ms'];
    expect(checkGrounding('rate limit 45 req/s', sources).ungrounded).toEqual(['45']);
    // Without the context rule, the value alone is found.
    expect(checkGrounding('rate limit 45 req/s', sources, { context: false }).grounded).toBe(true);
  });

  it('one side suffices, across up to 4 characters of punctuation', () => {
    expect(checkGrounding('rate limit 40 requests', ['limit: 40 req/s']).grounded).toBe(true);
    expect(checkGrounding('rate limit 40 requests', ['at most 40 requests']).grounded).toBe(true);
    expect(checkGrounding('rate limit 40 requests', ['limit = "40"']).grounded).toBe(true);
    expect(checkGrounding('rate limit 40 requests', ['limit =  "40"']).grounded).toBe(false);
    expect(checkGrounding('rate limit 40 requests', ['limit was raised; 40 workers']).grounded).toBe(false);
  });

  it('the word before may stand one function word away in the source, as match.ts allows', () => {
    expect(checkGrounding('rate limit 40 requests', ['the limit of 40 req/s']).grounded).toBe(true);
    expect(checkGrounding('timeout 30 later', ['timeout set to 30']).grounded).toBe(true);
    expect(checkGrounding('timeout 30 later', ['timeout was 30']).grounded).toBe(true);
    expect(checkGrounding('timeout 30 later', ['timeout proof 30']).grounded).toBe(false);
    expect(checkGrounding('timeout 30 later', ['timeout, it then grew to 30']).grounded).toBe(false);
  });

  it('stop words and values are not neighbours: a number with none stands alone', () => {
    expect(checkGrounding('it is 40', ['40 workers']).grounded).toBe(true);
    expect(checkGrounding('42 tests', ['Ran 42 tests in 0.4s']).grounded).toBe(true);
  });
});

describe('rule: the summarizer framing is not a value', () => {
  it('turn references, headers and list numbering', () => {
    const s = [
      '[summary of turns 12–15; not authoritative for exact values — use recall]',
      'Summary of turns 3-9:',
      '1. t12–15: limit 40 req/s',
      '2) (t16) Turns 17 to 19 set requests v4.5.0',
      'turn 20 and turns 21, 22 and 23: nothing else',
    ].join('\n');
    expect(summaryValues(s)).toEqual(['40', 'req/s', 'v4.5.0']);
    expect(checkGrounding(s, SOURCES).grounded).toBe(true);
  });

  it('the extractive summarizer line prefix and its "more spans" line', () => {
    const s = '- t123–125 assistant: rate limit of 40 req/s per key\n- t126 user: Pinned requests v4.5.0\n- … 4 more span(s)';
    expect(summaryValues(s)).toEqual(['40', 'req/s', 'v4.5.0']);
    expect(checkGrounding(s, SOURCES).grounded).toBe(true);
  });

  it('a re-summary quotes its sources prefixes, whole or cut short at the end of a line', () => {
    const s = '- t1–40 system: - t1–20 system: - t12–15 assistant: limit 40 req/s\n- t41–60 system: - t41 user: - t4';
    expect(summaryValues(s)).toEqual(['40', 'req/s']);
  });

  it('a number in the text is still a value', () => {
    expect(checkGrounding('- t5 assistant: retried 7 times', SOURCES).ungrounded).toEqual(['7']);
  });
});

describe('rule: where the extractive summarizer cuts, a value may be a piece of a source value', () => {
  it('a first line cut in the middle of a number or a path, wherever the cut falls', async () => {
    for (let pad = 0; pad <= 140; pad++) {
      const text = `${'w'.repeat(pad)} 123456789 astropy/io/fits/connect.py 0.25s ${'v'.repeat(pad % 7)} float16\nsecond line`;
      const summary = await extractiveSummary([span(7, text)]);
      expect([pad, checkGrounding(summary, [text]).ungrounded]).toEqual([pad, []]);
    }
  });

  it('an anchor fact cut at both ends (a window of a long line), wherever the cuts fall', async () => {
    for (let pad = 0; pad <= 90; pad++) {
      const text = `first line\n${'p'.repeat(pad)} 98765 ${'pad '.repeat(30)}rate_limit=40 and a long tail ${'z1 '.repeat(30)}12345678 x.y_z`;
      const summary = await extractiveSummary([span(9, text, 'user', true)]);
      expect(summary).toContain(' … ');
      expect([pad, checkGrounding(summary, [text]).ungrounded]).toEqual([pad, []]);
    }
  });

  it('an anchor fact cut at its start only (the match near the end of a long line)', async () => {
    for (let pad = 0; pad <= 21; pad++) {
      const text = `first line\n${' abc_def.ghi 31415926'.repeat(14)} ${'q'.repeat(pad)} rate_limit=40 done`;
      const summary = await extractiveSummary([span(9, text, 'user', true)]);
      expect([pad, checkGrounding(summary, [text]).ungrounded]).toEqual([pad, []]);
    }
  });

  it('a line the summarizer did not cut keeps both bounds at its end', async () => {
    const text = 'THOUGHT: `RelatedIn` starts at 46.';
    const summary = await extractiveSummary([span(5, text)]);
    expect(checkGrounding(summary.replace('46', '47'), [text, 'offset 470 bytes'])).toMatchObject({ grounded: false, ungrounded: ['47'] });
  });

  it('a value right before or after an ellipsis written by a summarizer', () => {
    expect(checkGrounding('ids 12345… and …7890 seen', ['ids 1234567890 seen']).grounded).toBe(true);
    expect(checkGrounding('ids 12345… and …789 seen', ['ids 1234567890 seen']).grounded).toBe(false);
    // Away from a cut, both bounds hold.
    expect(checkGrounding('ids 12345 seen', ['ids 1234567890 seen']).grounded).toBe(false);
  });

  it('nothing is relaxed in a line not of the extractive format', () => {
    expect(checkGrounding('- rate limit: 45', ['rate limit: 450 req/min']).grounded).toBe(false);
  });
});

describe('rule: sources of a re-summary are the summaries it merges', () => {
  it('a coarser summary of two summaries is grounded by their texts, and a value from neither is not', async () => {
    const a = await extractiveSummary([span(1, 'rate limit 40 req/s'), span(2, 'requests v4.5.0 pinned')]);
    const b = await extractiveSummary([span(3, 'wrote config/limits.yaml')]);
    const merged = await extractiveSummary([
      { spanId: 10, kind: 'summary', role: 'system', turnStart: 1, turnEnd: 2, text: a, anchor: false },
      { spanId: 11, kind: 'summary', role: 'system', turnStart: 3, turnEnd: 3, text: b, anchor: false },
    ]);
    expect(checkGrounding(merged, [a, b]).grounded).toBe(true);
    expect(checkGrounding(`${merged}\n- note: limit 45 req/s`, [a, b]).ungrounded).toEqual(['45']);
  });
});

describe('rule: a line in the extractive format quotes the span it cites, verbatim', () => {
  const listing = { text: '$ nl -ba app.py\n   178\t    if ready:\n   179\t        return 40', turnStart: 7, turnEnd: 7 };
  const tests = { text: 'Ran 60 tests in 0.512s\nOK', turnStart: 8, turnEnd: 8 };
  const later = { text: 'Ran 61 tests in 0.530s\nOK', turnStart: 9, turnEnd: 9 };

  it("a listing line whose number another line of the same listing states: the quote is not the span's", () => {
    const faithful = '- t7 tool: 178\t    if ready:';
    expect(checkGrounding(faithful, [listing]).grounded).toBe(true);
    // 179 is in the listing, beside no content word: the value alone is grounded…
    expect(checkGrounding('179 if ready', [listing.text]).grounded).toBe(true);
    // …but as a quote of turn 7 it is not what turn 7 says.
    expect(checkGrounding('- t7 tool: 179\t    if ready:', [listing])).toMatchObject({ grounded: false, ungrounded: ['179'] });
  });

  it("a test count another turn of the pass printed: checked against the cited turn's text", () => {
    expect(checkGrounding('- t8 tool: Ran 60 tests in 0.512s', [tests, later]).grounded).toBe(true);
    expect(checkGrounding('- t8 tool: Ran 61 tests in 0.512s', [tests, later])).toMatchObject({ grounded: false, ungrounded: ['61'] });
    // Without turns on the sources, any source may hold the quote: the same line is grounded.
    expect(checkGrounding('- t8 tool: Ran 61 tests in 0.530s', [tests.text, later.text]).grounded).toBe(true);
  });

  it("a quote citing turns no source covers is checked against every source; a re-summary's quotes against the summary that covers them", async () => {
    expect(checkGrounding('- t99 tool: Ran 61 tests in 0.530s', [tests, later]).grounded).toBe(true);
    const inner = await extractiveSummary([span(8, tests.text), span(9, later.text)]);
    const outer = await extractiveSummary([{ spanId: 20, kind: 'summary', role: 'system', turnStart: 8, turnEnd: 9, text: inner, anchor: false }]);
    expect(checkGrounding(outer, [{ text: inner, turnStart: 8, turnEnd: 9 }]).grounded).toBe(true);
    expect(checkGrounding(outer.replace('Ran 60', 'Ran 62'), [{ text: inner, turnStart: 8, turnEnd: 9 }]).grounded).toBe(false);
  });

  it('first line and anchor fact are quoted separately, each verbatim', async () => {
    const s = { ...span(3, 'Deploy notes\nrun it\nThe API enforces a rate limit of 40 req/s per token.'), anchor: true };
    const text = await extractiveSummary([s]);
    expect(text).toContain(' … ');
    expect(checkGrounding(text, [{ text: s.text, turnStart: 3, turnEnd: 3 }]).grounded).toBe(true);
    expect(checkGrounding(text.replace('Deploy notes', 'Deploy notes v2'), [{ text: s.text, turnStart: 3, turnEnd: 3 }]).ungrounded).toEqual(['v2']);
  });
});

describe('rule: an empty summary, or one without values, is grounded', () => {
  it('empty', () => {
    expect(checkGrounding('', [])).toEqual({ grounded: true, values: [], ungrounded: [] });
    expect(checkGrounding('', SOURCES)).toEqual({ grounded: true, values: [], ungrounded: [] });
    expect(summaryValues('')).toEqual([]);
  });

  it('words only', () => {
    expect(checkGrounding('The agent looked around and fixed the bug.', [])).toEqual({ grounded: true, values: [], ungrounded: [] });
  });
});

describe('the default summarizer over real turns: no false alarm, every shifted number flagged', () => {
  const open: SpanStore[] = [];
  afterAll(async () => {
    while (open.length) await open.pop()!.close();
  });

  it('every pass of a budgeted window over 600 real turns is grounded; a shifted first number of each is not', async () => {
    const store = await SpanStore.open(tmpDir(), { durability: 'none' });
    open.push(store);
    let passes = 0;
    const alarms: string[][] = [];
    let shifted = 0;
    const missed: string[] = [];
    const window = new ContextWindow(store, {
      budgetTokens: 3000,
      keepRecentTurns: 4,
      summarize: async (spans) => {
        const text = await extractiveSummary(spans);
        const sources = spans.map((s) => s.text);
        passes++;
        const r = checkGrounding(text, sources);
        if (!r.grounded) alarms.push(r.ungrounded);
        // A number with a content word beside it, +1 (the seed failure's shape).
        const m = /(?<=[A-Za-z]{3,}[ =:]{1,2})\d{2,}(?![\d.])/.exec(text.replace(/- t\d+(?:–\d+)? \S+: /g, (p) => ' '.repeat(p.length)));
        if (m) {
          shifted++;
          const bad = text.slice(0, m.index) + String(Number(m[0]) + 1) + text.slice(m.index + m[0].length);
          if (checkGrounding(bad, sources).grounded) missed.push(bad.slice(Math.max(0, m.index - 40), m.index + 20));
        }
        return text;
      },
    });
    for (const t of realTurns(600)) await window.push({ turn: t.turn, role: t.role, text: t.text, attachToPrevious: t.kind === 'observation' });
    expect(passes).toBeGreaterThan(20);
    expect(alarms).toEqual([]);
    expect(shifted).toBeGreaterThan(5);
    // (A shifted number can be stated beside the same word by another turn of the pass;
    // bench/grounding.bench.ts counts those over the whole transcript. None in this slice.)
    expect(missed).toEqual([]);
  }, 120_000);
});
