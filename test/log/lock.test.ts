// One writer per store: flock(LOCK_EX|LOCK_NB) on <dir>/LOCK for the writer's life.
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { columns, openLog, rowsFor, tmpDir } from './helpers.js';

const child = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lock-child.mjs');
const tryInChild = (dir: string): string => execFileSync(process.execPath, [child, dir, 'try'], { encoding: 'utf8' }).trim();

describe('a second writer is refused with LOCKED, in this process and in another', () => {
  it('same process: a second open() of LOCK conflicts (separate open file descriptions)', async () => {
    const dir = tmpDir('lock-same');
    const log = openLog(dir);
    expect(() => openLog(dir)).toThrowError(expect.objectContaining({ code: 'LOCKED', name: 'LockedError' }));
    // The failed open left the holder intact and working.
    expect(await log.append(columns(rowsFor(0, 1)))).toBe(1);
    // Readers take no lock.
    const reader = openLog(dir, { readOnly: true });
    expect(reader.nextId()).toBe(2);
    await reader.close();
    await log.close();
    const next = openLog(dir);
    expect(next.nextId()).toBe(2);
    await next.close();
  });

  it('another process is refused while we hold it, and gets it once we close', async () => {
    const dir = tmpDir('lock-child');
    const log = openLog(dir);
    expect(tryInChild(dir)).toBe('error LOCKED LockedError');
    await log.close();
    expect(tryInChild(dir)).toBe('opened');
  });

  it('the lock is free again after the holding process is SIGKILLed', async () => {
    const dir = tmpDir('lock-kill');
    const holder = spawn(process.execPath, [child, dir, 'hold'], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      holder.stdout.on('data', (d: Buffer) => (String(d).includes('held') ? resolve() : reject(new Error(String(d)))));
      holder.on('exit', () => reject(new Error('holder exited')));
    });
    expect(() => openLog(dir)).toThrowError(expect.objectContaining({ code: 'LOCKED' }));
    const exited = new Promise((r) => holder.once('exit', r));
    holder.kill('SIGKILL');
    await exited;
    const log = openLog(dir);
    expect(log.nextId()).toBe(1);
    await log.close();
  });
});
