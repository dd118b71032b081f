// stats() of a reader while a writer in another process rolls segments and saves its indexes:
// a file renamed or removed between the listing and its stat is not an error.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SpanStore } from '../../src/index.js';
import { tmpDir } from '../helpers/data.js';

const child = path.join(path.dirname(fileURLToPath(import.meta.url)), 'roll-writer-child.mjs');

describe("a reader's stats() never fails on files the writer renames or removes meanwhile", () => {
  it('2 s of stats() against a writer rolling 4 KiB segments and checkpointing: no error, sizes counted', async () => {
    const dir = tmpDir();
    const p = spawn(process.execPath, [child, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((r) => p.on('exit', r));
    await new Promise<void>((resolve, reject) => {
      p.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      p.on('exit', () => reject(new Error('the writer exited before it was ready')));
    });
    const reader = await SpanStore.open(dir, { readOnly: true });
    const errors: string[] = [];
    let calls = 0;
    let bytes = 0;
    try {
      for (const end = Date.now() + 2000; Date.now() < end; calls++) {
        try {
          bytes = reader.stats().bytesOnDisk;
        } catch (e) {
          errors.push(`${(e as { code?: string }).code ?? (e as Error).name}: ${(e as Error).message}`);
        }
      }
    } finally {
      p.stdin.end();
      await exited;
      await reader.close();
    }
    expect(errors.slice(0, 3)).toEqual([]);
    expect(calls).toBeGreaterThan(100);
    expect(bytes).toBeGreaterThan(4096);
  });
});
