/**
 * How a Computer runs the demo MCP server (mcp-server.ts), an MCP server config's
 * `{command, args}`:
 * - in this checkout (`npm run stack`, the tests): compiled to JavaScript on plain node, its
 *   packages (the MCP SDK, zod) loaded from the checkout's node_modules;
 * - anywhere else (docker compose's Computers, which hold the built packages and no checkout):
 *   one self-contained file with everything it imports, written by `standaloneDemoMcpServer`.
 */
import { compileScript, compileStandalone } from "../launch/compile.ts";

export const DEMO_MCP_SCRIPT = "scripts/demo/mcp-server.ts";

export interface StdioCommand {
  command: string;
  args: string[];
}

/** The demo MCP server of this checkout, as a stdio MCP server config. */
export async function demoMcpCommand(): Promise<StdioCommand> {
  return { command: process.execPath, args: [await compileScript(DEMO_MCP_SCRIPT)] };
}

/**
 * Writes the demo MCP server as one JavaScript file that needs nothing but node (no
 * node_modules beside it), to `outFile`.
 */
export function standaloneDemoMcpServer(outFile: string): Promise<void> {
  return compileStandalone(DEMO_MCP_SCRIPT, outFile);
}
