/**
 * The demo MCP server (stdio), run by `npm run demo-mcp`, the stack, docker compose's Computers
 * and the tests (mcp-command.ts says how it runs; no package ships it). Its tools
 * produce every kind of content the binary sideband has to handle, and it offers a small SKILL
 * package as `skill://` resources (staging mode `resources`, D20).
 *
 * Env: `DEMO_SKILL_HOST` (host segment of the skill URIs, default `demo`).
 * `--http PORT` serves Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio (stateless: one
 * server instance per request, so the toggles and list_changed notifications are stdio-only) and
 * prints `listening <port>` on stdout.
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { isAbsolute } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { patternBytes, pngOfAbout } from "./content.ts";
import { encodePng } from "./png.ts";

const MAX_DEMO_BYTES = 256 * 1024 * 1024;
const size = z.number().int().min(0).max(MAX_DEMO_BYTES);

const host = process.env.DEMO_SKILL_HOST ?? "demo";
/** How many `slow` calls were interrupted by `notifications/cancelled` (tests read it). */
let slowCancelled = 0;

function buildServer(): McpServer {
  const server = new McpServer(
    { name: "a2c-demo", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true }, resources: { listChanged: true } } },
  );

  server.registerTool(
    "echo",
    {
      description: "Echoes text back (result-level _meta included).",
      inputSchema: { text: z.string() },
      annotations: { readOnlyHint: true, title: "Echo" },
      // Protocol 0.4.0: a server-declared tag layer (only `tags` is taken; alias is filtered).
      _meta: { a2c_tool_meta: { tags: ["text", "demo"], alias: "ignored" } },
    },
    ({ text }) => ({ content: [{ type: "text", text }], _meta: { demo_echo: true } }),
  );

  server.registerTool(
    "add",
    {
      description: "Adds two numbers and returns structured content.",
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    ({ a, b }) => ({
      content: [{ type: "text", text: String(a + b) }],
      structuredContent: { sum: a + b },
    }),
  );

  server.registerTool(
    "png",
    {
      description: "A real PNG of the requested size (noise=true makes it incompressible).",
      inputSchema: {
        width: z.number().int().min(1).max(8192),
        height: z.number().int().min(1).max(8192),
        noise: z.boolean().optional(),
      },
    },
    ({ width, height, noise }) => {
      const png = encodePng({
        width,
        height,
        ...(noise ? { noiseSeed: width * 7919 + height } : {}),
      });
      return {
        content: [
          { type: "text", text: `png ${width}x${height}` },
          {
            type: "image",
            data: png.toString("base64"),
            mimeType: "image/png",
            _meta: { demo: "png" },
          },
        ],
      };
    },
  );

  server.registerTool(
    "audio",
    {
      description: "Random bytes of the given size labelled as audio/wav.",
      inputSchema: { size },
    },
    ({ size: n }) => ({
      content: [{ type: "audio", data: randomBytes(n).toString("base64"), mimeType: "audio/wav" }],
    }),
  );

  server.registerTool(
    "resource_blob",
    {
      description: "An embedded binary resource of the given size (deterministic bytes).",
      inputSchema: { size, mimeType: z.string().optional() },
    },
    ({ size: n, mimeType }) => ({
      content: [
        {
          type: "resource",
          resource: {
            uri: `demo://blob/${n}`,
            mimeType: mimeType ?? "application/octet-stream",
            blob: patternBytes(n).toString("base64"),
          },
        },
      ],
    }),
  );

  server.registerTool(
    "many_images",
    {
      description: "k noisy PNG images of about `size` bytes each.",
      inputSchema: { count: z.number().int().min(1).max(256), size },
    },
    ({ count, size: n }) => ({
      content: Array.from({ length: count }, (_, i) => ({
        type: "image" as const,
        data: pngOfAbout(n, i + 1).toString("base64"),
        mimeType: "image/png",
      })),
    }),
  );

  server.registerTool(
    "huge_text",
    { description: "A text item of the given size in bytes.", inputSchema: { size } },
    ({ size: n }) => ({ content: [{ type: "text", text: "x".repeat(n) }] }),
  );

  server.registerTool(
    "fail",
    { description: "Always fails (MCP isError).", inputSchema: { message: z.string().optional() } },
    ({ message }) => ({
      content: [{ type: "text", text: message ?? "the demo tool failed as asked" }],
      isError: true,
    }),
  );

  server.registerTool(
    "slow",
    {
      description: "Waits `ms` milliseconds; honours cancellation.",
      inputSchema: { ms: z.number().int().min(0).max(3_600_000) },
    },
    async ({ ms }, extra) => {
      try {
        await sleep(ms, undefined, { signal: extra.signal });
      } catch (err) {
        slowCancelled++;
        throw err;
      }
      return { content: [{ type: "text", text: `done after ${ms} ms` }] };
    },
  );

  server.registerTool(
    "cancelled_count",
    { description: "How many slow calls were cancelled by the client so far." },
    () => ({ content: [{ type: "text", text: String(slowCancelled) }] }),
  );

  server.registerTool(
    "sha256_file",
    {
      description:
        "The sha256 and size of a file on the Computer's machine, by absolute path (e.g. an " +
        "upload's landing_path); streamed, so any size.",
      inputSchema: { path: z.string().min(1) },
      outputSchema: { sha256: z.string(), size: z.number() },
      annotations: { readOnlyHint: true, title: "sha256 of a file" },
    },
    async ({ path }) => {
      if (!isAbsolute(path)) {
        return { content: [{ type: "text", text: "path must be absolute" }], isError: true };
      }
      const hash = createHash("sha256");
      let n = 0;
      try {
        for await (const piece of createReadStream(path) as AsyncIterable<Buffer>) {
          hash.update(piece);
          n += piece.length;
        }
      } catch (err) {
        const text = `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`;
        return { content: [{ type: "text", text }], isError: true };
      }
      const digest = hash.digest("hex");
      return {
        content: [{ type: "text", text: `${digest}  ${n}` }],
        structuredContent: { sha256: digest, size: n },
      };
    },
  );

  server.registerTool("pid", { description: "This server's process id." }, () => ({
    content: [{ type: "text", text: String(process.pid) }],
  }));

  const extra = server.registerTool(
    "extra",
    { description: "A tool that comes and goes (see toggle_extra)." },
    () => ({ content: [{ type: "text", text: "extra" }] }),
  );
  extra.disable();

  server.registerTool(
    "toggle_extra",
    { description: "Adds or removes the `extra` tool (sends tools/list_changed)." },
    () => {
      if (extra.enabled) extra.disable();
      else extra.enable();
      return { content: [{ type: "text", text: `extra ${extra.enabled ? "on" : "off"}` }] };
    },
  );

  // ---- skill:// resources (mode `resources`) -------------------------------------------------

  const source = { source: { mode: "resources" }, version: "1" };

  function textResource(skill: string, rel: string, mimeType: string, text: string) {
    const uri = `skill://${host}/${skill}/${rel}`;
    return server.registerResource(`${skill}/${rel}`, uri, { mimeType, _meta: source }, () => ({
      contents: [{ uri, mimeType, text }],
    }));
  }

  textResource(
    "hello-skill",
    "SKILL.md",
    "text/markdown",
    "---\nname: hello-skill\ndescription: Says hello from the demo MCP server.\n---\n# Hello\n\nSee references/guide.md.\n",
  );
  textResource(
    "hello-skill",
    "references/guide.md",
    "text/markdown",
    "# Guide\n\nGreet the user politely.\n",
  );
  {
    const uri = `skill://${host}/hello-skill/assets/logo.png`;
    const logo = encodePng({ width: 4, height: 4 });
    server.registerResource(
      "hello-skill/assets/logo.png",
      uri,
      { mimeType: "image/png", _meta: source },
      () => ({ contents: [{ uri, mimeType: "image/png", blob: logo.toString("base64") }] }),
    );
  }
  const second = textResource(
    "second-skill",
    "SKILL.md",
    "text/markdown",
    "---\nname: second-skill\ndescription: Appears when toggle_skill is called.\n---\n# Second\n",
  );
  second.disable();

  server.registerTool(
    "toggle_skill",
    { description: "Adds or removes the `second-skill` package (resources/list_changed)." },
    () => {
      if (second.enabled) second.disable();
      else second.enable();
      return { content: [{ type: "text", text: `second-skill ${second.enabled ? "on" : "off"}` }] };
    },
  );

  return server;
}

const httpFlag = process.argv.indexOf("--http");
if (httpFlag === -1) {
  await buildServer().connect(new StdioServerTransport());
} else {
  const http = createServer((req, res) => {
    if (!req.url?.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const server = buildServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  http.listen(Number(process.argv[httpFlag + 1] ?? 0), "127.0.0.1", () => {
    process.stdout.write(`listening ${(http.address() as AddressInfo).port}\n`);
  });
}
