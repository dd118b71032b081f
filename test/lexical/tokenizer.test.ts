// One describe per rule of the tokenizer table in native/lexical/tokenizer.h.
import { afterAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { addDocs, asDocs, openIndex, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const index = openIndex(path.join(tmp.dir, 'tok.idx'));
const tok = (s: string) => index.tokenize(s);

describe('separators', () => {
  it('splits on markdown and shell punctuation, which never appears in a token', () => {
    expect(tok('`fooBar`')).toEqual(['foobar', 'foo', 'bar']);
    expect(tok('a=b x|y $HOME [1]; "q" \'s\' (p) {c} <t> a,b !x? *y* &z ^w %v ~u')).toEqual([
      'a', 'b', 'x', 'y', 'home', '1', 'q', 's', 'p', 'c', 't', 'a', 'b', 'x', 'y', 'z', 'w', 'v', 'u',
    ]);
    for (const t of tok('```bash\necho "$PATH" | grep -c foo; x=`ls`\n```')) {
      expect(t).not.toMatch(/[`'"()[\]{}<>$|;=,!?*&^%~\s]/);
    }
  });
  it('makes `fooBar` findable as fooBar, foo and bar', () => {
    const dir = tempDir();
    try {
      const ix = openIndex(path.join(dir.dir, 'x.idx'));
      addDocs(ix, asDocs(['call `fooBar` here', 'unrelated text']));
      for (const q of ['fooBar', 'foo', 'bar', 'FOOBAR']) expect(Array.from(ix.search(q, 5, 1, NaN, NaN).ids)).toEqual([0]);
    } finally {
      dir.cleanup();
    }
  });
  it('treats Unicode spaces, arrows, box drawing and emoji as separators', () => {
    expect(tok('a\u00a0b→c├──d✓e😀f')).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });
});

describe('case folding', () => {
  it('folds ASCII, Latin-1, Latin Extended, Greek and Cyrillic', () => {
    expect(tok('ÉCOLE Ĳssel ŁÓDŹ ΣΟΦΊΑ МОСКВА ЁЖ Ǆ')).toEqual(['école', 'ĳssel', 'łódź', 'σοφία', 'москва', 'ёж', 'ǆ']);
  });
  it('folds the irregular Latin Extended-B and Greek capitals', () => {
    expect(tok('ƁƆƏ ǱǄ Ⱥ ϴ Ϳ')).toEqual(['ɓɔə', 'ǳǆ', 'ⱥ', 'θ', 'ϳ']);
    expect(tok('aϐc')).toEqual(['aβc']); // a lowercase variant is not a camelCase boundary
  });
  it('folds final sigma to σ and keeps ß (simple folding only)', () => {
    expect(tok('λόγος Straße')).toEqual(['λόγοσ', 'straße']);
  });
  it('does not split at a case change inside non-ASCII lowercase words', () => {
    expect(tok('привет')).toEqual(['привет']);
  });
});

describe('joiners trimmed', () => {
  it('drops joiners at the ends of a word', () => {
    expect(tok('--verbose end. ::x -1 @user #42 path/')).toEqual(['verbose', 'end', 'x', '1', 'user', '42', 'path']);
  });
  it('a word of joiners only yields nothing', () => {
    expect(tok('--- ... // :: _ ===')).toEqual([]);
  });
});

describe('camelCase', () => {
  it('keeps the identifier whole and splits it', () => {
    expect(tok('fooBar')).toEqual(['foobar', 'foo', 'bar']);
    expect(tok('HTTPServer')).toEqual(['httpserver', 'http', 'server']);
    expect(tok('parseJSON')).toEqual(['parsejson', 'parse', 'json']);
    expect(tok('getHTTPResponseCode')).toEqual(['gethttpresponsecode', 'get', 'http', 'response', 'code']);
  });
});

describe('snake/kebab', () => {
  it('keeps snake_case and kebab-case whole and splits them', () => {
    expect(tok('test_sampled')).toEqual(['test_sampled', 'test', 'sampled']);
    expect(tok('foo-bar')).toEqual(['foo-bar', 'foo', 'bar']);
    expect(tok('__init__')).toEqual(['init']);
  });
  it('splits camelCase inside snake_case parts', () => {
    expect(tok('my_fooBar')).toEqual(['my_foobar', 'my', 'foobar', 'foo', 'bar']);
  });
});

describe('dotted', () => {
  it('keeps dotted names whole and splits them', () => {
    expect(tok('astropy.timeseries')).toEqual(['astropy.timeseries', 'astropy', 'timeseries']);
    expect(tok('std::vector')).toEqual(['std::vector', 'std', 'vector']);
    expect(tok('user@example.com')).toEqual(['user@example.com', 'user', 'example', 'com']);
  });
});

describe('paths', () => {
  it('yields the whole path, components with inner joiners, and the atoms', () => {
    expect(tok('astropy/timeseries/tests/test_sampled.py')).toEqual([
      'astropy/timeseries/tests/test_sampled.py', 'astropy', 'timeseries', 'tests', 'test_sampled.py', 'test', 'sampled', 'py',
    ]);
  });
  it('handles URLs and Windows paths', () => {
    expect(tok('https://github.com/foo/bar.git')).toEqual([
      'https://github.com/foo/bar.git', 'https', 'github.com', 'github', 'com', 'foo', 'bar.git', 'bar', 'git',
    ]);
    expect(tok('C:\\Users\\x.txt')).toEqual(['c:\\users\\x.txt', 'c', 'users', 'x.txt', 'x', 'txt']);
  });
});

describe('decimals', () => {
  it('keeps a dot between digits inside the number', () => {
    expect(tok('3.5 1.479 2.26.2 10.0.0.1')).toEqual(['3.5', '1.479', '2.26.2', '10.0.0.1']);
  });
  it('a dot not between digits is a joiner', () => {
    expect(tok('file1.py')).toEqual(['file1.py', 'file1', 'py']);
  });
});

describe('number+unit', () => {
  it('emits the whole, the number and the unit', () => {
    expect(tok('3.5ms')).toEqual(['3.5ms', '3.5', 'ms']);
    expect(tok('1.479s')).toEqual(['1.479s', '1.479', 's']);
    expect(tok('40k 100MB 3.5µs')).toEqual(['40k', '40', 'k', '100mb', '100', 'mb', '3.5µs', '3.5', 'µs']);
  });
});

describe('ratios', () => {
  it('40 req/s gives 40, req/s, req and s', () => {
    expect(tok('40 req/s')).toEqual(['40', 'req/s', 'req', 's']);
    expect(tok('3/4')).toEqual(['3/4', '3', '4']);
  });
});

describe('hex', () => {
  it('keeps 0x literals as one token', () => {
    expect(tok('0x1f 0xDEADbeef')).toEqual(['0x1f', '0xdeadbeef']);
  });
  it('0x followed by non-hex falls back to the general rules', () => {
    expect(tok('0xzz')).toEqual(['0xzz', '0', 'xzz']);
  });
});

describe('version', () => {
  it('v2.26.2 yields the whole and the bare number', () => {
    expect(tok('v2.26.2')).toEqual(['v2.26.2', '2.26.2']);
    expect(tok('usearch@v2.26.2')).toEqual(['usearch@v2.26.2', 'usearch', 'v2.26.2', '2.26.2']);
  });
  it('a v that is not followed by a digit is an ordinary letter', () => {
    expect(tok('vim')).toEqual(['vim']);
  });
});

describe('error codes', () => {
  it('keeps codes whole (letter→digit is not a boundary)', () => {
    expect(tok('error[E0425]: ENOENT, HTTP 404 ERR_MODULE_NOT_FOUND')).toEqual([
      'error', 'e0425', 'enoent', 'http', '404', 'err_module_not_found', 'err', 'module', 'not', 'found',
    ]);
    expect(tok('x86_64 sha256')).toEqual(['x86_64', 'x86', '64', 'sha256']);
  });
});

describe('long tokens', () => {
  it('cuts tokens at 96 bytes on a code point boundary', () => {
    const [t] = tok('a'.repeat(300));
    expect(t).toBe('a'.repeat(96));
    const [u] = tok('é'.repeat(100)); // 2 bytes each: 48 code points fit
    expect(u).toBe('é'.repeat(48));
  });
});

describe('invalid and edge input', () => {
  it('empty and whitespace-only text yield no tokens', () => {
    expect(tok('')).toEqual([]);
    expect(tok(' \n\t ')).toEqual([]);
  });
  it('lone surrogates (replaced by U+FFFD in UTF-8) do not break tokenization', () => {
    expect(tok('a\ud800b')).toEqual(['a\ufffdb']);
  });
});
