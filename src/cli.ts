#!/usr/bin/env node
/**
 * The `spanguard` command line. Every command has `--help`; `--json` prints machine-readable
 * output; colours only on a TTY; `--version` prints the package version. Exit codes:
 *   0 ok · 1 error · 2 usage (a bad option, or a file or store argument that does not exist)
 *   3 verify: log corruption · 4 verify: a damaged index file or log/index disagreement
 *   5 verdict/audit: not lossless · 6 verify --remote: the bucket and the local log differ
 *   65 malformed input (a line number is printed)
 * Errors print one line, prefixed `spanguard <command>:`; a stack trace only for an internal
 * error under SPANGUARD_DEBUG=1.
 */
import fs from 'node:fs';
import { SpanguardError } from './errors.js';
import { TranscriptError } from './transcript.js';
import { EXIT, InputError, packageVersion, UsageError } from './cli/common.js';
import { HELP } from './cli/help.js';
import { cmdAudit, cmdReport, cmdStats, cmdVerdict, cmdVerify } from './cli/inspect.js';
import { cmdReplay } from './cli/replay.js';
import { cmdExact, cmdSearch } from './cli/search.js';

export { HELP, OPTIONS } from './cli/help.js';
export { supportSummary } from './cli/search.js';

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  replay: cmdReplay,
  search: cmdSearch,
  exact: cmdExact,
  verdict: cmdVerdict,
  audit: cmdAudit,
  verify: cmdVerify,
  stats: cmdStats,
  report: cmdReport,
  // Loaded on use: the MCP server's module imports the optional MCP SDK.
  mcp: async (argv) => (await import('./mcp.js')).runMcpCommand(argv),
};

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') return (console.log(HELP.main), cmd ? EXIT.ok : EXIT.usage);
  if (cmd === '--version' || cmd === '-v') return (console.log(packageVersion()), EXIT.ok);
  const run = COMMANDS[cmd];
  if (!run) {
    console.error(`spanguard: unknown command "${cmd}"\n\n${HELP.main}`);
    return EXIT.usage;
  }
  try {
    return await run(rest);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`spanguard ${cmd}: ${e.message}`);
      return EXIT.usage;
    }
    if (e instanceof TranscriptError || e instanceof InputError) {
      console.error(`spanguard ${cmd}: malformed input: ${e.message}`);
      return EXIT.badInput;
    }
    if (e instanceof SpanguardError) {
      console.error(`spanguard ${cmd}: ${e.code}: ${e.message}`);
      return e.code === 'CORRUPT' ? EXIT.corrupt : EXIT.error;
    }
    // A system error (a file that cannot be read or written, a directory where a file was
    // meant): Node's message names the call and the path.
    const sys = e as NodeJS.ErrnoException;
    if (typeof sys?.code === 'string' && typeof sys.syscall === 'string') {
      console.error(`spanguard ${cmd}: ${sys.message}`);
      return EXIT.error;
    }
    const debug = process.env.SPANGUARD_DEBUG === '1';
    console.error(`spanguard ${cmd}: internal error: ${debug ? ((e as Error)?.stack ?? String(e)) : ((e as Error)?.message ?? String(e))}`);
    if (!debug) console.error('  (SPANGUARD_DEBUG=1 prints the stack trace; please include it when reporting this)');
    return EXIT.error;
  }
}

const invokedDirectly = process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(new URL(import.meta.url).pathname);
if (invokedDirectly) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
