/**
 * The direct baseline's server: the same file over plain HTTP Range requests on loopback, what a
 * user would do if the Computer were reachable. Each request reads its range with one positional
 * read into a fresh Buffer (like the bare Computer) and answers 206 with Content-Range.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { open, type FileHandle } from "node:fs/promises";
import { serve } from "../lib/ipc.ts";

let file: FileHandle | null = null;
let size = 0;

const RANGE = /^bytes=(\d+)-(\d+)$/;

const http = createServer((req, res) => {
  const m = RANGE.exec(req.headers.range ?? "");
  const fh = file;
  if (!m || !fh) {
    res.writeHead(416).end();
    return;
  }
  const first = Number(m[1]);
  const last = Math.min(Number(m[2]), size - 1);
  if (first > last) {
    res.writeHead(416, { "content-range": `bytes */${size}` }).end();
    return;
  }
  const len = last - first + 1;
  const buf = Buffer.allocUnsafe(len);
  fh.read(buf, 0, len, first).then(
    () => {
      res.writeHead(206, {
        "content-type": "application/octet-stream",
        "content-length": len,
        "content-range": `bytes ${first}-${last}/${size}`,
      });
      res.end(buf);
    },
    () => res.writeHead(500).end(),
  );
});
http.keepAliveTimeout = 60_000;

serve({
  start: async (args) => {
    const { path } = args as { path: string };
    file = await open(path, "r");
    size = (await file.stat()).size;
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}` };
  },
});
