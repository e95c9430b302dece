/**
 * Connect-time authentication (D4). Providers are pluggable behind `AuthProvider`; the
 * built-in one checks bearer tokens from configuration.
 *
 * Token sources, all merged:
 * - `--token T` (repeatable) / `A2C_TOKENS=T1,T2`: unscoped tokens (any office).
 * - `--tokens-file F` / `A2C_TOKENS_FILE=F`: one grant per line,
 *       <token> [office_id[,office_id...]]
 *   A token alone may join any office; with a list it may join only those offices. Blank lines and
 *   lines starting with `#` are ignored. Tokens and office ids contain no whitespace; office ids in
 *   the list contain no comma. Example:
 *       # ops token, any office
 *       s3cr3t-ops
 *       team-a-token  office-a,office-a-staging
 *
 * The token is read from `auth.token`, or else from an `Authorization: Bearer <token>` header.
 * Comparison is constant time (sha256 digests compared with timingSafeEqual against every grant,
 * no early exit). A token is never logged: grants are named `token#<n>` in logs.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { IncomingHttpHeaders } from "node:http";

/** What a provider sees of a connecting socket. */
export interface AuthRequest {
  /** socket.io `auth` object (business data only; may be anything the client sent). */
  auth: unknown;
  headers: IncomingHttpHeaders;
  address: string;
}

/** Who a connection is, for the rest of the Server. */
export interface Principal {
  /** A non-secret label for logs and metrics (never the credential). */
  readonly id: string;
  /** Offices this principal may join; `null` means any office. */
  readonly offices: ReadonlySet<string> | null;
}

export type AuthDecision = { ok: true; principal: Principal } | { ok: false; message: string };

export interface AuthProvider {
  /** Human-readable name for the start-up log. */
  readonly name: string;
  authenticate(request: AuthRequest): Promise<AuthDecision>;
}

export function mayJoin(principal: Principal, officeId: string): boolean {
  return principal.offices === null || principal.offices.has(officeId);
}

/** One configured token and where it may go. */
export interface TokenGrant {
  token: string;
  /** Office ids this token may join; absent or empty means any office. */
  offices?: readonly string[];
}

/** Longest credential considered at all; longer ones are refused without hashing. */
export const MAX_TOKEN_LENGTH = 4096;

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** Extracts the presented token: `auth.token` first, then `Authorization: Bearer`. */
export function presentedToken(request: AuthRequest): string | undefined {
  const auth = request.auth;
  if (typeof auth === "object" && auth !== null && !Array.isArray(auth)) {
    const token = (auth as Record<string, unknown>).token;
    if (typeof token === "string" && token !== "") return token;
  }
  const header = request.headers.authorization;
  if (typeof header === "string") {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    if (m?.[1]) return m[1];
  }
  return undefined;
}

export class TokenAuthProvider implements AuthProvider {
  readonly name = "token";
  private readonly grants: { digest: Buffer; principal: Principal }[];

  constructor(grants: readonly TokenGrant[]) {
    if (grants.length === 0) throw new Error("TokenAuthProvider needs at least one token");
    this.grants = grants.map((g, i) => {
      if (g.token === "" || /\s/.test(g.token) || g.token.length > MAX_TOKEN_LENGTH) {
        throw new Error(`token #${i + 1} is empty, too long or contains whitespace`);
      }
      const offices = g.offices && g.offices.length > 0 ? new Set(g.offices) : null;
      return { digest: digest(g.token), principal: { id: `token#${i + 1}`, offices } };
    });
  }

  get size(): number {
    return this.grants.length;
  }

  async authenticate(request: AuthRequest): Promise<AuthDecision> {
    const token = presentedToken(request);
    if (token === undefined) return { ok: false, message: "Unauthorized: no token presented" };
    if (token.length > MAX_TOKEN_LENGTH) return { ok: false, message: "Unauthorized" };
    const presented = digest(token);
    let match: Principal | null = null;
    for (const grant of this.grants) {
      // No early exit: the time taken does not depend on which grant matched.
      if (timingSafeEqual(presented, grant.digest) && match === null) match = grant.principal;
    }
    return match ? { ok: true, principal: match } : { ok: false, message: "Unauthorized" };
  }
}

/** `--no-auth`: everyone is admitted to any office. Development only. */
export class NoAuthProvider implements AuthProvider {
  readonly name = "none";
  async authenticate(): Promise<AuthDecision> {
    return { ok: true, principal: { id: "anonymous", offices: null } };
  }
}

/** Parses the tokens file format documented at the top of this module. */
export function parseTokensFile(text: string): TokenGrant[] {
  const grants: TokenGrant[] = [];
  for (const [index, rawLine] of text.split(/\r?\n/).entries()) {
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#")) continue;
    const parts = line.split(/\s+/);
    if (parts.length > 2) {
      throw new Error(`tokens file line ${index + 1}: expected "<token> [office,office...]"`);
    }
    const [token, officeList] = parts as [string, string | undefined];
    const offices = officeList
      ?.split(",")
      .map((o) => o.trim())
      .filter((o) => o !== "");
    grants.push(offices && offices.length > 0 ? { token, offices } : { token });
  }
  return grants;
}

export async function loadTokensFile(path: string): Promise<TokenGrant[]> {
  return parseTokensFile(await readFile(path, "utf8"));
}
