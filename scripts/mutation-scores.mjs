#!/usr/bin/env node
// Per-file mutation scores from the last `npm run mutate` (reports/mutation/mutation.json), or
// from the report named on the command line (`npm run mutate:guard` writes
// reports/mutation/guard/mutation.json): killed + timed out over every mutant a test could
// reach or not (no coverage counts against).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = process.argv[2] ? path.resolve(process.argv[2]) : path.join(root, 'reports', 'mutation', 'mutation.json');
if (!fs.existsSync(file)) {
  console.error(`no ${path.relative(root, file)}: run npm run mutate (or mutate:guard) first`);
  process.exit(2);
}
const report = JSON.parse(fs.readFileSync(file, 'utf8'));
const rows = [];
for (const [name, f] of Object.entries(report.files)) {
  const n = {};
  for (const m of f.mutants) n[m.status] = (n[m.status] ?? 0) + 1;
  const detected = (n.Killed ?? 0) + (n.Timeout ?? 0);
  const valid = detected + (n.Survived ?? 0) + (n.NoCoverage ?? 0);
  rows.push({ file: name, score: valid === 0 ? NaN : (100 * detected) / valid, killed: n.Killed ?? 0, timeout: n.Timeout ?? 0, survived: n.Survived ?? 0, noCoverage: n.NoCoverage ?? 0 });
}
for (const r of rows) console.log(`${r.file.padEnd(18)} ${r.score.toFixed(1).padStart(5)}%  killed ${r.killed}, timeout ${r.timeout}, survived ${r.survived}, no coverage ${r.noCoverage}`);
