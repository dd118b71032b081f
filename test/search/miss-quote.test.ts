// Rule 8 of src/support.ts: a query that one span holds word for word but for a changed word
// (a number shifted, a word misspelled into another) quotes that span and misquotes it. It is
// a miss whatever a looser candidate holds by coverage, while the same line verbatim, a
// question with the asker's words around a quoted command, a natural question with a typo and
// a paraphrase still find their spans. A line cut by a span's edge is read on in the span
// beside it.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore, type TurnInput } from '../../src/store.js';
import { analyzeQuery } from '../../src/query.js';
import { answersText } from '../../src/support.js';
import { QUOTE_MIN_WORDS, quoteHold, quoteWords } from '../../src/quote.js';
import { realTurns, tmpDir } from '../helpers/data.js';

const RULES = 'DO NOT MODIFY: Tests, configuration files (pyproject.toml, setup.cfg, etc.)';
const ARRAYS =
  'THOUGHT: So:\n1. If both arrays are floating point types (standard numpy arrays), it uses `where_not_allclose`.\n2. If "P" is in `col.format` (VLA 32-bit), it compares rows one by one.';
const BEFORE_EDGE = '## Hand-off\nOnce the migration has finished ';
const AFTER_EDGE =
  'copying the ledger rows (orders, invoices, refunds), run the reconciliation script twice\nand attach its report:\n\n```bash\n./reconcile --twice\n```';
const EDGE_LINE = 'Once the migration has finished copying the ledger rows (orders, invoices, refunds), run the reconciliation script twice';
const COMMAND = 'Bash(source venv/bin/activate && pytest --spec specs/library_spec.py)';

let store: SpanStore;
let dir: string;
const ids: Record<string, number> = {};

beforeAll(async () => {
  dir = tmpDir('spanguard-miss-quote-');
  store = await SpanStore.open(dir, { durability: 'none' });
  const turns: TurnInput[] = realTurns(60).map((t, i) => ({ turn: i + 1, role: t.role, text: t.text }));
  const add = (name: string, role: string, text: string) => {
    ids[name] = turns.length;
    turns.push({ turn: turns.length + 1, role, text });
  };
  add('rules', 'user', `Follow these rules.\n"${RULES}"\nThen start.`);
  // Shares the line's file names (6 of its 11 terms with their parts) and nothing else.
  add('files', 'assistant', 'Let me check `pyproject.toml` or `setup.cfg` or `tox.ini`.\n\n```bash\ncat pyproject.toml setup.cfg tox.ini\n```');
  add('arrays', 'assistant', ARRAYS);
  // One line of the instructions cut across two spans, as a host that splits long turns cuts it.
  add('before', 'user', BEFORE_EDGE);
  add('after', 'user', AFTER_EDGE);
  add('alias', 'user', 'Note for later: the on-call alias is ops-kestrel-42.');
  add('rotation', 'user', 'QUESTION: what is the on-call rotation?');
  add('command', 'assistant', `⏺ ${COMMAND}…\n  ⎿  test session starts\n     12 passed in 0.31s`);
  const out = await store.appendMany(turns);
  for (const k of Object.keys(ids)) ids[k] = out[ids[k]!]!;
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a near-verbatim quote with one word or value changed is a miss', () => {
  it('a word misspelled into another: the span that holds the rest word for word decides, not a looser match', async () => {
    for (const q of [`- ${RULES.replace('configuration', 'configvration')}`, RULES.replace('configuration', 'configwration')]) {
      const r = await store.search(q, { k: 10 });
      expect(r.miss, q).toBe(true);
      expect(r.missReason, q).toBe('value-contradicted');
      expect(r.missDetail, q).toMatch(/config[vw]ration \(stated: configuration\)/);
      expect(r.hits, q).toEqual([]);
    }
  });

  it('a shifted number next to a quoted identifier', async () => {
    const q = 'THOUGHT: So:\n2. If both arrays are floating point types (standard numpy arrays), it uses `where_not_allclose`.';
    const r = await store.search(q, { k: 10 });
    expect(r.miss).toBe(true);
    expect(r.missReason).toBe('value-contradicted');
    expect(r.missDetail).toBe('2 (stated: 1)');
  });

  it('a line cut by a span edge is read on in the span before it', async () => {
    for (const q of [EDGE_LINE.replace('finished', 'finnished'), `When ${EDGE_LINE.replace('finished', 'finnished').slice(5)}`]) {
      const r = await store.search(q, { k: 10 });
      expect(r.miss, q).toBe(true);
      expect(r.missDetail, q).toContain('finnished (stated: finished)');
    }
  });
});

describe('what the rule leaves found', () => {
  it('the lines verbatim, and word for word with other punctuation', async () => {
    for (const [q, id] of [
      [RULES, 'rules'],
      ['DO NOT MODIFY - Tests; configuration files: pyproject.toml setup.cfg etc', 'rules'],
      ['THOUGHT: So:\n1. If both arrays are floating point types (standard numpy arrays), it uses `where_not_allclose`.', 'arrays'],
    ] as const) {
      const r = await store.search(q, { k: 10 });
      expect(r.miss, q).toBe(false);
      expect(
        r.hits.map((h) => h.spanId),
        q,
      ).toContain(ids[id]);
    }
  });

  it('the line across the span edge, unchanged', async () => {
    const r = await store.search(EDGE_LINE, { k: 10 });
    expect(r.miss).toBe(false);
    expect(r.hits.map((h) => h.spanId)).toContain(ids.after);
  });

  it("a question with the asker's words around a quoted command", async () => {
    for (const q of [
      `what pytest summary line did the tool call \`⏺ ${COMMAND}…\` print?`,
      `what pytest summary line did the tool call ⏺ ${COMMAND}… print?`,
    ]) {
      const r = await store.search(q, { k: 10 });
      expect(r.miss, q).toBe(false);
      expect(
        r.hits.map((h) => h.spanId),
        q,
      ).toContain(ids.command);
    }
  });

  it("a short question that a span asks word for word but for another noun: the asker's word, not a changed value", async () => {
    const r = await store.search('what is the on-call alias?', { k: 10 });
    expect(r.miss).toBe(false);
    expect(r.hits.map((h) => h.spanId)).toContain(ids.alias);
    // The same shape with a value changed is a misquote of what the span asks.
    expect(quoteHold(quoteWords('what is the on-call rotation 2?', true)!, 'what is the on-call rotation 3?', undefined, true)?.kind).toBe('changed');
    expect(quoteHold(quoteWords('what is the on-call alias?', true)!, 'what is the on-call rotation?', undefined, true)).toBeNull();
    expect(quoteHold(quoteWords('what is the on-call rotaton?', true)!, 'what is the on-call rotation?', undefined, true)?.kind).toBe('changed');
  });

  it('a natural question with a typo of a common word, and a paraphrase', async () => {
    for (const q of ['which configuraton files must the agent not modify?', 'what files was I told never to change besides the tests?']) {
      const r = await store.search(q, { k: 10 });
      expect(r.miss, q).toBe(false);
      expect(
        r.hits.map((h) => h.spanId),
        q,
      ).toContain(ids.rules);
    }
  });
});

describe('quoteHold', () => {
  const words = (s: string) => quoteWords(s)!;
  it('reads words, not punctuation; a word equal by its normal form is the same word', () => {
    expect(quoteHold(words('start_line = 612 and the rest'), 'x start_line=612, and the rest.')?.kind).toBe('words');
    expect(quoteHold(words('the tests configured the build'), 'so the tests configures the build')?.kind).toBe('words');
  });
  it('a changed word, at most one in five; more changes are no quote', () => {
    expect(quoteHold(words('the timeout is 30 seconds'), 'so the timeout is 45 seconds here')).toEqual({ kind: 'changed', asked: ['30'], stated: ['45'] });
    expect(quoteHold(words('the timeout is 30 seconds'), 'so the deadline is 45 seconds here')).toBeNull();
  });
  it('a part cut by the text edge is read word for word only; a short statement is not read', () => {
    expect(quoteHold(words('when you have completed your work and cannot go on'), 'completed your work and cannot go on. Then')?.kind).toBe('cut');
    expect(quoteHold(words('when you have completed your work and cannot go on'), 'comppeted your work and cannot go on. Then')).toBeNull();
    expect(QUOTE_MIN_WORDS).toBe(4);
    expect(quoteWords('one two three')).toBeNull();
  });
  it("a question's opening question word is the asker's, left out", () => {
    expect(quoteWords('Did the library hold?', true)).toBeNull();
    expect(quoteWords('Did the library hold 179 books?', true)).toEqual(['the', 'library', 'hold', '179', 'books']);
    expect(quoteHold(words('the library hold 179 books'), 'The library holds 179 books in total.')?.kind).toBe('words');
  });
});

describe('answersText agrees with search on a misquote', () => {
  it('a text that misquotes the statement does not answer it; one that holds it word for word does', () => {
    const shifted = 'THOUGHT: So:\n2. If both arrays are floating point types (standard numpy arrays), it uses `where_not_allclose`.';
    expect(answersText(analyzeQuery(shifted), ARRAYS)).toBe(false);
    expect(answersText(analyzeQuery(shifted.replace('2.', '1.')), ARRAYS)).toBe(true);
  });
});
