// The lexical index names the file it last loaded or saved by the CRC its header ends with
// (stats().fileCrc): the store's index identity records it, so another store's file that
// checks out is still told apart.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { addDocs, openIndex, tempDir } from './helpers.js';

describe('stats().fileCrc is the header CRC of the file last loaded or saved', () => {
  it('0 before any; the header CRC after save and after load; other content, another CRC; a rejected file leaves 0', () => {
    const { dir, cleanup } = tempDir();
    try {
      const file = path.join(dir, 'lexical.idx');
      const a = openIndex(file);
      expect(a.stats().fileCrc).toBe(0);
      addDocs(a, [{ id: 1, text: 'the rate limit is 40 req/s' }, { id: 2, text: 'deploy to eu-west-3b' }]);
      a.save();
      const crc = a.stats().fileCrc;
      expect(crc).toBe(fs.readFileSync(file).readUInt32LE(60));
      const b = openIndex(file);
      expect(b.stats()).toMatchObject({ loadedFrom: 'file', fileCrc: crc });

      const other = path.join(dir, 'other.idx');
      const c = openIndex(other);
      addDocs(c, [{ id: 1, text: 'the rate limit is 45 req/s' }, { id: 2, text: 'deploy to eu-west-3b' }]);
      c.save();
      expect(c.stats().fileCrc).not.toBe(crc);

      const bytes = fs.readFileSync(file);
      bytes[bytes.length - 2]! ^= 0x01;
      fs.writeFileSync(file, bytes);
      expect(openIndex(file).stats()).toMatchObject({ loadedFrom: 'rebuilt', fileCrc: 0 });
    } finally {
      cleanup();
    }
  });
});
