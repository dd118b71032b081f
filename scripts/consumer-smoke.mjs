#!/usr/bin/env node
// The installed package at work in a consumer project: node scripts/consumer-smoke.mjs <consumer-dir>
// Imports spanguard through its package.json "exports" from <consumer-dir>/node_modules, as the
// consumer's own code would; opens a store in a temp dir, appends, searches, prints the verdict.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const consumer = path.resolve(process.argv[2] ?? '.');
const pkgFile = createRequire(path.join(consumer, 'package.json')).resolve('spanguard/package.json');
const pkg = JSON.parse(fs.readFileSync(pkgFile, 'utf8'));
const { SpanStore } = await import(pathToFileURL(path.join(path.dirname(pkgFile), pkg.exports['.'].import)).href);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spanguard-smoke-'));
const store = await SpanStore.open(dir);
await store.append({ turn: 1, role: 'user', text: 'The upstream API allows at most 40 req/s per key.' });
await store.append({ turn: 2, role: 'assistant', text: 'Noted: I will throttle the crawler to 40 req/s.' });
await store.append({ turn: 3, role: 'user', text: 'Deploy to the staging cluster when the tests pass.' });
const found = await store.search('what rate limit does the upstream API allow?');
const never = await store.search('which Vagrant box do we use?');
console.log(`spanguard ${pkg.version} from ${path.dirname(pkgFile)}`);
console.log(`search: ${found.hits.length} hit(s), first from turn ${found.hits[0]?.turnStart}: ${found.hits[0]?.text}`);
console.log(`never said: ${never.miss ? 'not in transcript' : 'hit'}; verdict: ${store.verdict().state}`);
await store.close();
fs.rmSync(dir, { recursive: true, force: true });
if (found.hits[0]?.turnStart !== 1 || !never.miss) process.exit(1);
