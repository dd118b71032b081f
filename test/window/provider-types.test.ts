// The providers' TypeScript types accept what messages({ format }) and the converters
// return: provider-types.ts is compiled with tsc --noEmit against the `openai`, `@anthropic-ai/sdk` and `ai` packages.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

describe("messages({ format }) and the converters type-check against the providers' SDK types", () => {
  it('ChatCompletionMessageParam (openai), MessageCreateParamsNonStreaming (@anthropic-ai/sdk) and ModelMessage (ai) accept them; the format-less messages() is refused', () => {
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const run = (): string => execFileSync(process.execPath, [tsc, '-p', path.join(root, 'test', 'window', 'tsconfig.provider-types.json')], { encoding: 'utf8', stdio: 'pipe' });
    let out = '';
    try {
      out = run();
    } catch (e) {
      out = String((e as { stdout?: string }).stdout ?? e);
    }
    expect(out).toBe('');
  }, 120_000);
});
