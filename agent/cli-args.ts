/**
 * The `agent` command's flags and commands: the help text, each command's usage line, and the
 * parser. Node's `parseArgs` splits the words (so `--token=-abc`, `-oFILE` and `--` work as
 * usual); this file checks them and says what is wrong in its own words, with the usage line of
 * the command at hand, never in parseArgs' ("To specify a positional argument starting with a
 * '-'…").
 */
import { parseArgs } from "node:util";

/** The program name in usage lines. */
export const PROG = "a2c-agent";

interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
}

const OPTIONS = {
  server: { type: "string" },
  office: { type: "string" },
  token: { type: "string" },
  name: { type: "string" },
  path: { type: "string" },
  "connect-timeout": { type: "string" },
  json: { type: "boolean" },
  quiet: { type: "boolean", short: "q" },
  window: { type: "string" },
  "chunk-bytes": { type: "string" },
  "target-delay": { type: "string" },
  binary: { type: "boolean" },
  base64: { type: "boolean" },
  "no-compress": { type: "boolean" },
  "stock-transport": { type: "boolean" },
  cache: { type: "string" },
  output: { type: "string", short: "o" },
  continue: { type: "boolean", short: "c" },
  "limit-rate": { type: "string" },
  "speed-limit": { type: "string" },
  "speed-time": { type: "string" },
  "max-time": { type: "string" },
  out: { type: "string" },
  timeout: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies Record<string, OptionSpec>;

type OptionName = keyof typeof OPTIONS;
export type CliValues = {
  [K in OptionName]?: (typeof OPTIONS)[K]["type"] extends "string" ? string : boolean;
};

/** Each command: its arguments after the name (min, max) and its usage line. */
export const COMMANDS = {
  computers: { min: 0, max: 0, usage: "computers" },
  skills: { min: 1, max: 1, usage: "skills <computer>" },
  skill: { min: 2, max: 3, usage: "skill <computer> <name> [rel_path] [-o FILE [-c]]" },
  tools: { min: 1, max: 1, usage: "tools <computer>" },
  call: { min: 2, max: 3, usage: "call <computer> <tool> [JSON] [--out DIR] [--timeout S]" },
  blob: {
    min: 2,
    max: 2,
    usage:
      "blob <computer> <handle> -o FILE [-c] [--limit-rate RATE] [--window N] [--chunk-bytes N] [--base64] [--no-compress]",
  },
  put: { min: 2, max: 2, usage: "put <computer> <FILE> [--name HINT] [--base64]" },
} as const;
export type Command = keyof typeof COMMANDS;

export function usageLine(command?: Command): string {
  const what = command ? COMMANDS[command].usage : "<command> [args]";
  return `usage: ${PROG} --server URL --office ID [options] ${what}`;
}

export const HELP = `Usage: ${PROG} --server URL --office ID [options] <command> [args]

Commands:
  computers                                   Computers in the office
  skills <computer>                           the Computer's skills
  skill <computer> <name> [rel_path] [-o FILE [-c]]
                                              a skill resource (text to stdout; binary needs -o)
  tools <computer>                            the Computer's tools
  call <computer> <tool> [JSON] [--out DIR] [--timeout S]
                                              call a tool; --out writes binary items to DIR
  blob <computer> <handle> -o FILE [-c] [--limit-rate RATE] [--window N] [--base64]
                                              download a blob handle to FILE
  put <computer> <FILE> [--name HINT] [--base64]
                                              upload FILE to the Computer's landing root;
                                              stdout: the stored file's path (for a tool call)

Options (flags win over env):
  --server URL        Server base URL, http:// or https://   (env A2C_SERVER_URL)
  --office ID         office to join                          (env A2C_OFFICE_ID)
  --token T           auth token                              (env A2C_TOKEN)
  --name N            Agent name (default cli-<random>)       (env A2C_AGENT_NAME);
                      for put: the stored file's name hint (default FILE's name)
  --path P            Engine.IO path (default /socket.io/)
  --connect-timeout S give up on a handshake not answered in S seconds (default 20)
  --json              stdout is one JSON object (errors too); no progress
  -q, --quiet         no progress, no summary or notes on stderr (errors still are)
  --window N          most chunks in flight (default 16; the pull sets how many it needs)
  --chunk-bytes N     largest max_chunk_bytes per request (default 512 KiB binary, 64 KiB
                      base64; the pull sizes chunks to the link's rate)
  --target-delay MS   queue delay a download may add in front of other requests to the
                      same Computer (default 60)
  --base64            spec mode: base64 carriage, no blob_format sent (default: ask for
                      binary carriage, go on in base64 when the Computer answers so)
  --binary            ask for binary carriage (the default)
  --no-compress       send no content_encoding (default: ask for br, then gzip; the
                      Computer codes only the chunks it pays to code)
  --stock-transport   socket.io-client as shipped, without the SDK's fast path for base64
                      upload chunks (the same bytes on the wire)
  --cache DIR         content-addressed cache directory
  -o, --output FILE   output file (written as FILE.a2c-part, renamed when verified)
  -c, --continue      resume from FILE.a2c-part, which an interrupted download keeps (its
                      bytes are hashed again first; other content there starts from 0)
  --limit-rate RATE   cap the download's rate, bytes a second: 500k, 2M, 1G (powers of 1024)
  --speed-limit RATE  end a download slower than RATE a second over --speed-time
                      (default 1k; 0 turns it off)
  --speed-time S      the window of --speed-limit, seconds (default 60)
  --max-time S        end a download that takes longer than S seconds (default none)
  --out DIR           output directory for call
  --timeout S         tool timeout in seconds (default 60)
  -h, --help          this text

Exit codes:
  0   success (an empty office or list too: a note says so on stderr)
  1   unexpected failure
  2   usage error (bad flags, arguments or JSON)
  3   protocol error (the Server or Computer refused: 4xxx / 40x codes, busy, join refused,
      a Computer breaking the get_blob contract, e.g. answering far less than asked; a
      Computer that takes no uploads)
  4   transport failure (cannot connect, disconnected, no answer in time, 408, a download
      under --speed-limit or over --max-time)
  5   integrity failure (sha256 / size mismatch, content changed under the read or upload)
  6   output failure (cannot write the file: disk full, no permission; a resource larger
      than the file system or the in-memory bound allows); the path is left as it was
  130 interrupted (Ctrl-C); a download keeps FILE.a2c-part for -c (143 for SIGTERM);
      an upload leaves no file behind
`;

/** A usage error: its message, and the usage line of the command it concerns. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  constructor(
    message: string,
    readonly usage: string = usageLine(),
  ) {
    super(message);
  }
}

export interface ParsedCli {
  values: CliValues;
  command: Command | undefined;
  args: string[];
}

/** Edit distance, for "did you mean" on a mistyped option or command. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        prev[j]! + 1,
        row[j - 1]! + 1,
        prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = row;
  }
  return prev[b.length]!;
}

function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3; // more than two edits away is not a typo of it
  for (const c of candidates) {
    const d = distance(word, c);
    if (d < bestD) [best, bestD] = [c, d];
  }
  return best;
}

function isCommand(word: string | undefined): word is Command {
  return word !== undefined && Object.hasOwn(COMMANDS, word);
}

/** Parses the command line; throws `UsageError` for anything it cannot take as given. */
export function parseCli(argv: readonly string[]): ParsedCli {
  const { values, positionals, tokens } = parseArgs({
    args: [...argv],
    options: OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const [first, ...args] = positionals;
  const command = isCommand(first) ? first : undefined;
  // A mistyped option may have taken the command's place ("--windw 3 blob ..."): the usage line
  // is still the command's.
  const usage = usageLine(command ?? positionals.find(isCommand));
  for (const t of tokens) {
    if (t.kind !== "option") continue;
    const spec = (OPTIONS as Record<string, OptionSpec>)[t.name];
    if (!spec) {
      const guess = closest(t.name, Object.keys(OPTIONS));
      const hint = guess ? ` (did you mean --${guess}?)` : "";
      throw new UsageError(`unknown option '${t.rawName}'${hint}`, usage);
    }
    const flag = spec.short === t.rawName.slice(1) ? t.rawName : `--${t.name}`;
    if (spec.type === "boolean" && t.value !== undefined) {
      throw new UsageError(`${flag} takes no value (got '${t.value}')`, usage);
    }
    if (spec.type === "string") {
      if (t.value === undefined) throw new UsageError(`${flag} needs a value`, usage);
      if (!t.inlineValue && t.value.startsWith("-")) {
        throw new UsageError(
          `${flag} needs a value (one that starts with '-' goes as ${flag}=VALUE)`,
          usage,
        );
      }
    }
  }
  const parsed: ParsedCli = { values: values as CliValues, command, args };
  if (parsed.values.help) return parsed;
  if (first === undefined) throw new UsageError("no command given", usage);
  if (!command) {
    const guess = closest(first, Object.keys(COMMANDS));
    const hint = guess ? ` (did you mean '${guess}'?)` : "";
    throw new UsageError(
      `unknown command '${first}'${hint}; commands: ${Object.keys(COMMANDS).join(", ")}`,
      usage,
    );
  }
  const { min, max } = COMMANDS[command];
  if (args.length < min)
    throw new UsageError(`${command} needs ${argNames(command, args.length)}`, usage);
  if (args.length > max) {
    throw new UsageError(`${command}: unexpected argument '${args[max]}'`, usage);
  }
  return parsed;
}

/** The names of the positional arguments missing after `have` given ones. */
function argNames(command: Command, have: number): string {
  const names = COMMANDS[command].usage.match(/<[^>]+>/g) ?? [];
  return names.slice(have).join(" ");
}

/** A positive integer flag, or undefined when absent. */
export function positiveInt(
  value: string | undefined,
  flag: string,
  command?: Command,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(`${flag} must be a positive integer (got '${value}')`, usageLine(command));
  }
  return n;
}

/** A non-negative number of seconds (`--speed-time`, `--max-time`), or undefined when absent. */
export function seconds(
  value: string | undefined,
  flag: string,
  command?: Command,
): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\s*\d+(\.\d+)?\s*$/.test(value) || !(n > 0) || !Number.isFinite(n)) {
    throw new UsageError(
      `${flag} must be a positive number of seconds (got '${value}')`,
      usageLine(command),
    );
  }
  return n;
}

/**
 * `--server`: an http(s) URL. A bare `host:port` is the usual slip, so it is named with the fix
 * (socket.io would otherwise try https:// on it and fail with a TLS or DNS error).
 */
export function checkServerFlag(url: string, command?: Command): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed && /^https?:$/.test(parsed.protocol) && parsed.host !== "") return;
  const fix = /^[\w.-]+:\d+(\/.*)?$/.test(url) || !url.includes(":") ? ` (try http://${url})` : "";
  throw new UsageError(
    `--server must be an http:// or https:// URL, got '${url}'${fix}`,
    usageLine(command),
  );
}
