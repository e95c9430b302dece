/**
 * How the `agent` command reports a failure: one line saying what went wrong with the detail
 * that matters (the URL and cause of a failed connect; the code, reason, size and cap of a
 * refusal), a one-line hint where the fix is known, the exit code, and the same as a JSON object
 * for `--json`.
 *
 * The spec keeps `details` of a protocol error away from end users. This command is an
 * operator's tool, not an end-user surface: it shows the reason and sizes it needs to say what
 * to fix (docs/protocol.md, "The CLI shows details"). The SDK's error messages stay free of them.
 */
import { PROG, UsageError, type Command } from "./cli-args.ts";
import {
  AgentError,
  AuthError,
  BlobNotAccessibleError,
  BlobWriteError,
  BlobTooLargeError,
  ChunkContractError,
  ComputerNotFoundError,
  ConnectError,
  DisconnectedError,
  FileWriteError,
  IntegrityError,
  InvalidSkillNameError,
  JoinOfficeError,
  ProtocolError,
  ProtocolVersionError,
  RelayTimeoutError,
  RequestTimeoutError,
  ServerError,
  SidebandRestoreError,
  SkillNotFoundError,
  SkillResourceError,
  TooSlowError,
  UploadError,
  UploadIntegrityError,
} from "./errors.ts";
import { formatBytes } from "./progress.ts";

/** The exit codes, as docs/configuration.md ("Agent CLI") and `--help` list them. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  protocol: 3,
  transport: 4,
  integrity: 5,
  output: 6,
  interrupted: 130,
  terminated: 143,
} as const;

/** Ctrl-C (or SIGTERM) while the command ran. */
export class Interrupted extends Error {
  override readonly name = "Interrupted";
  constructor(readonly signal: "SIGINT" | "SIGTERM") {
    super(`interrupted (${signal})`);
  }
}

/** What the command was doing when it failed. */
export interface FailureContext {
  url?: string;
  office?: string;
  /** Whether a token was given (a 401 then means the wrong one). */
  token?: boolean;
  stage: "setup" | "connect" | "join" | "command";
  command?: Command;
  args: readonly string[];
  /**
   * The download in progress, if any: its partial file, and whether that was kept for `-c`
   * (known once the download failed).
   */
  download?: { file: string; partial: string; bytes: number; total: number; kept?: boolean };
  /** The upload in progress (`put`), if any. */
  upload?: { file: string; bytes: number; total: number };
}

export interface Failure {
  exit: number;
  line: string;
  hint?: string;
  /** The command's usage line (usage errors). */
  usage?: string;
  /** The error as `--json` prints it. */
  json: Record<string, unknown>;
}

/** `(4017 too_large)`, `(404)`: the code and reason of a protocol error. */
function codeOf(err: ProtocolError): string {
  return `(${err.code}${err.reason ? ` ${err.reason}` : ""})`;
}

function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/** The first of `args` that names a Computer, for commands that take one. */
function computerArg(ctx: FailureContext): string {
  return ctx.command && ctx.command !== "computers" ? (ctx.args[0] ?? "?") : "?";
}

function connectLine(err: ConnectError): [string, string?] {
  const hints: Partial<Record<ConnectError["reason"], string>> = {
    refused: "is the Server running, on that host and port?",
    dns: "check the host name in --server",
    timeout: "something accepts connections there but does not answer: is it the Server's port?",
    http:
      err.status === 404
        ? "check --path (the Server's Engine.IO path, default /socket.io/)"
        : undefined,
  };
  let hint = hints[err.reason];
  if (err.reason === "tls") {
    hint = /does not speak TLS/.test(err.message)
      ? `the Server may speak plain HTTP: try ${err.url.replace(/^https:/, "http:")}`
      : "the Server's certificate is not trusted here (NODE_EXTRA_CA_CERTS=ca.pem adds a CA)";
  }
  return [err.message, hint];
}

/** A refusal at connect time (version gate, auth, busy): always names the URL. */
function handshakeLine(err: ProtocolError, ctx: FailureContext): [string, string?] {
  const where = `cannot connect to ${ctx.url ?? "the Server"}`;
  if (err instanceof ProtocolVersionError) {
    if (err.code === 4900 || err.serverVersion === "") {
      return [
        `${where}: protocol version mismatch (${err.code}; the Server did not say which versions it accepts)`,
        "use an Agent of the Server's protocol version",
      ];
    }
    return [
      `${where}: protocol version mismatch: the Server speaks ${err.serverVersion} ` +
        `(accepts ${err.minSupported} to ${err.maxSupported}), this Agent ${err.clientVersion} (4008)`,
      "use an Agent of a version the Server accepts, or upgrade the Server",
    ];
  }
  if (err instanceof AuthError) {
    const refused = ctx.token ? "the Server refused the token" : "the Server needs a token";
    return [
      `${where}: ${refused} ${codeOf(err)}`,
      "pass a token the Server accepts with --token or A2C_TOKEN",
    ];
  }
  // A flat 404 at the handshake: the Server is there, the Engine.IO path is not.
  const hint =
    err.code === 404
      ? "check --path (the Server's Engine.IO path, default /socket.io/)"
      : busyHint(err);
  return [`${where}: ${err.message} ${codeOf(err)}`, hint];
}

function busyHint(err: ProtocolError): string | undefined {
  return err instanceof ServerError && err.reason === "busy" ? "retry in a few seconds" : undefined;
}

function skillResourceLine(err: SkillResourceError, ctx: FailureContext): [string, string?] {
  const [computer, skill, rel] = ctx.args;
  const what = `skill '${skill ?? "?"}' resource '${rel ?? "SKILL.md"}'`;
  switch (err.reason) {
    case "traversal":
      return [`${what} is outside the skill's directory ${codeOf(err)}`];
    case "forbidden":
      return [`${what} is a protected file ${codeOf(err)}`];
    case "not_found":
      return [
        `skill '${skill ?? "?"}' has no file '${rel ?? "?"}' ${codeOf(err)}`,
        `'${PROG} skill ${computer ?? "<computer>"} ${skill ?? "<name>"}' shows SKILL.md, which names the skill's files`,
      ];
    case "too_large": {
      const size = num(err.details?.total_size);
      const cap = num(err.details?.max_size);
      const isSize = size !== undefined ? ` is ${formatBytes(size)},` : "";
      const over =
        cap !== undefined ? `the Computer's cap of ${formatBytes(cap)}` : "the Computer's cap";
      const needs = size !== undefined ? `; this one needs at least ${size}` : "";
      return [
        `${what}${isSize} over ${over} ${codeOf(err)}`,
        `the Computer's --max-size BYTES (A2C_MAX_SIZE) raises the cap${needs}`,
      ];
    }
    default:
      return [`${what} is not accessible ${codeOf(err)}`];
  }
}

function blobLine(err: BlobNotAccessibleError): [string, string?] {
  switch (err.reason) {
    case "invalid_handle":
      return [
        `the Computer does not accept this blob handle ${codeOf(err)}`,
        "handles come from 'skill' or 'call' answers of the same Computer",
      ];
    case "gone":
      return [
        `the blob's source is gone ${codeOf(err)}`,
        "ask the producer ('skill' or 'call') again for a fresh handle",
      ];
    case "forbidden":
      return [`the Computer refused access to the blob ${codeOf(err)}`];
    default:
      return [`the blob is not accessible ${codeOf(err)}`];
  }
}

/** A 4019: what the Computer refused of the upload, and what fixes it. */
function uploadLine(err: BlobWriteError, ctx: FailureContext): [string, string?] {
  const computer = computerArg(ctx);
  switch (err.reason) {
    case "forbidden":
      return [
        `Computer '${computer}' takes no uploads: ${err.message} ${codeOf(err)}`,
        "the Computer's --landing-root DIR (A2C_LANDING_ROOT) says where uploads land",
      ];
    case "too_large": {
      const size = num(err.details?.total_size);
      const isSize = size !== undefined ? ` (${formatBytes(size)})` : "";
      return [
        `the file${isSize} is over Computer '${computer}''s upload cap ${codeOf(err)}`,
        "the Computer's --upload-max-bytes N (A2C_UPLOAD_MAX_BYTES) raises the cap",
      ];
    }
    case "busy":
      return [
        `Computer '${computer}' has too many uploads open ${codeOf(err)}`,
        "retry once its other uploads finished (the Computer's --upload-max-concurrent N raises the cap)",
      ];
    case "io_error":
      return [`Computer '${computer}' could not store the file: ${err.message} ${codeOf(err)}`];
    default:
      return [`Computer '${computer}' refused the upload: ${err.message} ${codeOf(err)}`];
  }
}

function protocolLine(err: ProtocolError, ctx: FailureContext): [string, string?] {
  if (ctx.stage === "connect") return handshakeLine(err, ctx);
  const computer = computerArg(ctx);
  if (err instanceof ComputerNotFoundError) {
    if (err.reason === "disconnected") {
      return [`Computer '${computer}' disconnected during the request ${codeOf(err)}`];
    }
    return [
      `no Computer '${computer}' in office '${ctx.office ?? "?"}' ${codeOf(err)}`,
      `'${PROG} computers' lists the office's Computers`,
    ];
  }
  if (err instanceof RelayTimeoutError) {
    return [`Computer '${computer}' did not answer in time ${codeOf(err)}`];
  }
  if (err instanceof SkillNotFoundError) {
    return [
      `Computer '${computer}' has no skill '${ctx.args[1] ?? "?"}' ${codeOf(err)}`,
      `'${PROG} skills ${computer}' lists its skills`,
    ];
  }
  if (err instanceof InvalidSkillNameError) {
    return [
      `'${ctx.args[1] ?? "?"}' is not a valid skill name ${codeOf(err)}`,
      `use a name as '${PROG} skills ${computer}' lists it`,
    ];
  }
  if (err instanceof SkillResourceError) return skillResourceLine(err, ctx);
  if (err instanceof BlobNotAccessibleError) return blobLine(err);
  if (err instanceof BlobWriteError) return uploadLine(err, ctx);
  return [`${err.message} ${codeOf(err)}`, busyHint(err)];
}

function interruptedLine(ctx: FailureContext): string {
  const u = ctx.upload;
  if (u) {
    const got = u.total > 0 ? `${formatBytes(u.bytes)} of ${formatBytes(u.total)}` : "nothing yet";
    return `interrupted: the upload of ${u.file} was abandoned (${got} sent); the Computer stores nothing of it`;
  }
  const d = ctx.download;
  if (d) {
    const got = d.total > 0 ? `${formatBytes(d.bytes)} of ${formatBytes(d.total)}` : "nothing yet";
    if (d.kept) {
      return `interrupted: ${d.file} was not written; the partial download (${got}) is kept in ${d.partial} (-c resumes it)`;
    }
    return `interrupted: ${d.file} was not written; the partial download (${got}) was removed`;
  }
  const stage =
    ctx.stage === "connect"
      ? ` while connecting to ${ctx.url ?? "the Server"}`
      : ctx.stage === "join"
        ? ` while joining office '${ctx.office ?? "?"}'`
        : ctx.command === "call"
          ? ": the tool call was cancelled (server:tool_call_cancel sent)"
          : "";
  return `interrupted${stage}`;
}

/** A file system failure of our own (creating --out, a directory of -o). */
function fsLine(err: NodeJS.ErrnoException): string | undefined {
  if (typeof err?.code !== "string" || typeof err.path !== "string") return undefined;
  return `cannot write '${err.path}': ${err.message.replace(/^[A-Z]+: /, "").split(",")[0]} (${err.code})`;
}

/** A resource its destination cannot hold, with where it would fit. */
function tooLargeLine(err: BlobTooLargeError, ctx: FailureContext): [string, string?] {
  const size = `${formatBytes(err.totalSize)} (${err.totalSize} bytes)`;
  const cap = err.limit !== undefined ? ` of ${formatBytes(err.limit)}` : "";
  switch (err.reason) {
    case "file":
      return [`the resource is ${size}, more than the file system allows for one file`];
    case "limit":
    case "buffer":
    case "string":
      return [
        `the resource is ${size}, over the in-memory bound${cap}`,
        ctx.command === "call"
          ? "--out DIR writes sidebanded items to files, whatever their size"
          : "-o FILE writes it to a file, whatever its size",
      ];
  }
}

/** The line, hint and exit code for `err`. */
export function describeFailure(err: unknown, ctx: FailureContext): Failure {
  let exit: number = EXIT.failure;
  let line: string;
  let hint: string | undefined;
  let usage: string | undefined;
  const json: Record<string, unknown> = {};
  if (err instanceof UsageError) {
    exit = EXIT.usage;
    line = err.message;
    usage = err.usage;
  } else if (err instanceof Interrupted) {
    exit = err.signal === "SIGTERM" ? EXIT.terminated : EXIT.interrupted;
    line = interruptedLine(ctx);
  } else if (err instanceof SidebandRestoreError && err.cause !== undefined) {
    const inner = describeFailure(err.cause, ctx);
    const itemLine = `content[${err.itemIndex}]: ${inner.line}`;
    return { ...inner, line: itemLine, json: { ...inner.json, summary: itemLine } };
  } else if (
    err instanceof UploadIntegrityError ||
    (err instanceof UploadError &&
      (err.reason === "echo_mismatch" || err.reason === "source_changed"))
  ) {
    // The bytes the Computer got are not the file's (it discarded them), or the file changed.
    exit = EXIT.integrity;
    line = `integrity failure: ${err.message}; nothing was stored`;
    Object.assign(json, { code: err.code, reason: err.reason });
  } else if (err instanceof RelayTimeoutError) {
    // A 408 is a protocol error on the wire, but for the user "no answer in time": transport.
    exit = EXIT.transport;
    [line, hint] = protocolLine(err, ctx);
    Object.assign(json, { code: err.code, reason: err.reason, ...err.details, ...err.extra });
  } else if (err instanceof ProtocolError) {
    exit = EXIT.protocol;
    [line, hint] = protocolLine(err, ctx);
    Object.assign(json, { code: err.code, reason: err.reason, ...err.details, ...err.extra });
  } else if (err instanceof ConnectError) {
    exit = EXIT.transport;
    [line, hint] = connectLine(err);
    Object.assign(json, {
      code: err.code,
      url: err.url,
      reason: err.reason,
      status: err.status,
      system_code: err.systemCode,
    });
  } else if (err instanceof JoinOfficeError) {
    exit = EXIT.protocol;
    line = `cannot join office '${ctx.office ?? "?"}': ${err.reason}`;
    Object.assign(json, { code: err.code, reason: err.reason });
  } else if (err instanceof DisconnectedError) {
    exit = EXIT.transport;
    line = `lost the connection to ${ctx.url ?? "the Server"} (${err.message})`;
    json.code = err.code;
  } else if (err instanceof RequestTimeoutError) {
    exit = EXIT.transport;
    line = `no answer to ${err.event} within ${err.timeoutMs / 1000} s`;
    json.code = err.code;
  } else if (err instanceof IntegrityError) {
    exit = EXIT.integrity;
    const file = ctx.download ? `; ${ctx.download.file} was not written` : "";
    line = `integrity failure: ${err.message}${file}`;
    Object.assign(json, { code: err.code, expected: err.expected, actual: err.actual });
  } else if (err instanceof BlobTooLargeError) {
    exit = EXIT.output;
    [line, hint] = tooLargeLine(err, ctx);
    Object.assign(json, {
      code: err.code,
      reason: err.reason,
      total_size: err.totalSize,
      limit: err.limit,
    });
  } else if (err instanceof FileWriteError) {
    exit = EXIT.output;
    line = `${err.message}; ${err.path} was left as it was`;
    Object.assign(json, { code: err.code, path: err.path, system_code: err.systemCode });
  } else if (err instanceof ChunkContractError) {
    exit = EXIT.protocol;
    line = `Computer '${computerArg(ctx)}' broke the get_blob contract: ${err.message}`;
    json.code = err.code;
  } else if (err instanceof TooSlowError) {
    exit = EXIT.transport;
    line =
      err.reason === "speed"
        ? `the download from Computer '${computerArg(ctx)}' is too slow: ${err.message}`
        : `the download from Computer '${computerArg(ctx)}' took too long: ${err.message}`;
    hint =
      err.reason === "speed"
        ? "--speed-limit and --speed-time set the minimum (--speed-limit 0 turns it off)"
        : "--max-time sets the bound";
    Object.assign(json, { code: err.code, reason: err.reason });
  } else if (err instanceof AgentError) {
    exit = EXIT.protocol;
    line = err.message;
    json.code = err.code;
  } else {
    const e = err as NodeJS.ErrnoException;
    const fs = fsLine(e);
    if (fs !== undefined) exit = EXIT.output;
    line = fs ?? `unexpected error: ${e?.message ?? String(err)}`;
    if (typeof e?.code === "string") json.code = e.code;
  }
  const d = ctx.download;
  if (d?.kept && !(err instanceof Interrupted)) {
    hint = `${hint ? `${hint}; ` : ""}the partial download is kept in ${d.partial}: -c resumes it`;
  }
  if (d?.kept) json.partial = d.partial;
  const type = (err as Error)?.name ?? "Error";
  const message = (err as Error)?.message ?? String(err);
  const clean = Object.fromEntries(Object.entries(json).filter(([, v]) => v !== undefined));
  return {
    exit,
    line,
    ...(hint !== undefined ? { hint } : {}),
    ...(usage !== undefined ? { usage } : {}),
    json: { type, message, summary: line, ...(hint ? { hint } : {}), ...clean },
  };
}

/** The lines a failure prints on stderr. */
export function failureText(f: Failure): string {
  let text = `${PROG}: ${f.line}\n`;
  if (f.hint) text += `hint: ${f.hint}\n`;
  if (f.usage) text += `${f.usage}\n(${PROG} --help lists every option)\n`;
  return text;
}
