/**
 * Growth: for every per-operation figure marked `growth`, cost against N over the full (not
 * --quick) results on disk, the fitted exponent (log-log least squares: cost ∝ N^k), written
 * to bench/results/growth.json, printed, and drawn as bench/growth.svg.
 *
 * k ≈ 0: the operation does not get slower as the session grows; k ≈ 1: linear in N.
 * Run by the runner after a full run; by hand: node build/bench-dist/bench/growth.js
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../src/native.js';
import { fitExponent, fmtValue, growthSvg, type Figure, type Fit } from './lib.js';

interface ResultFile {
  scale: number;
  quick: boolean;
  figures: Figure[];
  machineStart: { date: string; loadavg: number[] };
}

export function writeGrowth(resultsDir: string, svgPath: string): Fit[] {
  if (!fs.existsSync(resultsDir)) return [];
  const runs: ResultFile[] = fs
    .readdirSync(resultsDir)
    .filter((f) => /^bench-\de\d\.json$/.test(f))
    .map((f) => JSON.parse(fs.readFileSync(path.join(resultsDir, f), 'utf8')) as ResultFile)
    .filter((r) => !r.quick)
    .sort((a, b) => a.scale - b.scale);
  if (runs.length < 2) {
    console.log(`growth: ${runs.length} full-scale result(s) in ${path.relative(packageRoot, resultsDir)}; need two scales for a fit (e.g. --scale 1e4,1e5)`);
    return [];
  }
  const keys = new Map<string, { label: string; unit: string }>();
  for (const r of runs) for (const f of r.figures) if (f.growth && !keys.has(f.key)) keys.set(f.key, { label: f.label.replace(/ of \d+ spans/, '').replace(/ \((ours|r=|batches|built-in|add|log \+|phrase\+|text|lexical|process|hnsw|exact)[^)]*\)/g, '').replace(/,? per span$/, ' /span'), unit: f.unit });
  const fits: Fit[] = [];
  for (const [key, { label, unit }] of keys) {
    const points = runs.flatMap((r) => r.figures.filter((f) => f.key === key).map((f) => ({ n: r.scale, value: f.value })));
    if (points.length < 2) continue;
    fits.push({ key, label, unit, points, ...fitExponent(points) });
  }
  fits.sort((a, b) => b.exponent - a.exponent);
  fs.writeFileSync(
    path.join(resultsDir, 'growth.json'),
    JSON.stringify({ scales: runs.map((r) => ({ scale: r.scale, date: r.machineStart.date, loadavg: r.machineStart.loadavg })), fits }, null, 2),
  );
  const dates = runs.map((r) => `N=${r.scale.toExponential(0).replace('e+', 'e')} ${r.machineStart.date.slice(0, 16).replace('T', ' ')} UTC, load ${r.machineStart.loadavg[0]}`).join('; ');
  fs.writeFileSync(svgPath, growthSvg(fits, 'spanguard: cost per operation vs session size N', `runs: ${dates}`));
  console.log('\ngrowth (cost per op vs N, log-log least-squares exponent):');
  for (const f of fits) console.log(`  N^${f.exponent.toFixed(2).padStart(5)}  ${f.label}: ${f.points.map((p) => `${p.n.toExponential(0)} ${fmtValue(p.value, f.unit)}`).join(', ')}`);
  console.log(`  chart: ${path.relative(packageRoot, svgPath)}`);
  return fits;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  writeGrowth(path.join(packageRoot, 'bench', 'results'), path.join(packageRoot, 'bench', 'growth.svg'));
}
