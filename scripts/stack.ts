/**
 * `npm run stack`: the whole transport on real processes, ending with a verdict.
 * See scripts/stack/run.ts for the sequence and docs/stack.md for what it prints.
 */
import { connectHelp } from "./stack/connect-help.ts";
import { parseStackOptions, USAGE, type StackOptions } from "./stack/options.ts";
import { renderSummary } from "./stack/report.ts";
import { Aborted, REPO_ROOT, runStack } from "./stack/run.ts";

const EXIT_ON_SIGNAL: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

async function main(): Promise<number> {
  let opts: StackOptions;
  try {
    opts = parseStackOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(USAGE);
    return 0;
  }

  const controller = new AbortController();
  let caught: NodeJS.Signals | null = null;
  let release: (() => void) | null = null;
  const onSignal = (sig: NodeJS.Signals): void => {
    if (caught) return; // a second Ctrl-C while stopping: the stop is already under way
    caught = sig;
    process.stderr.write(`\n${sig}: stopping every process…\n`);
    controller.abort();
    release?.();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", onSignal);

  const io: { err: NodeJS.WritableStream; out: NodeJS.WritableStream; tty: boolean } = {
    err: process.stderr,
    out: process.stdout,
    tty: (opts.json ? process.stderr.isTTY : process.stdout.isTTY) === true,
  };
  // Progress goes where people look: stderr with --json, stdout otherwise.
  if (!opts.json) io.err = process.stdout;

  try {
    const running = await runStack(opts, io, controller.signal);
    const { report } = running;
    if (opts.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else process.stdout.write(`\n${renderSummary(report)}`);
    if (report.logDir) io.err.write(`logs: ${report.logDir}\n`);
    if (opts.keep && !caught) {
      io.err.write(connectHelp(running, REPO_ROOT));
      await new Promise<void>((r) => {
        release = r;
        if (caught) r();
      });
    }
    await running.stop(!report.ok);
    return caught && !opts.keep ? (EXIT_ON_SIGNAL[caught] ?? 1) : report.ok ? 0 : 1;
  } catch (err) {
    if (err instanceof Aborted) return EXIT_ON_SIGNAL[caught ?? "SIGINT"] ?? 1;
    process.stderr.write(`stack failed: ${(err as Error).message}\n`);
    return 1;
  }
}

process.exitCode = await main();
