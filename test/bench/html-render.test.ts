// The report's HTML page renders in headless Chromium without console errors, page errors or
// failed loads, every chart image loads, and a screenshot is taken. The report comes from a real
// (small) bench run: micro and the direct HTTP baseline.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { runBench } from "../support/bench-run.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

void test(
  "index.html renders in headless Chromium with no errors, and a screenshot is taken",
  { timeout: 300_000 },
  async () => {
    assert.ok(existsSync(CHROMIUM), `Chromium at ${CHROMIUM} (apt-get install chromium)`);
    const out = mkdtempSync(join(tmpdir(), "bench-html-"));
    try {
      const run = await runBench(["--quick", "--only", "micro,direct", "--out", out]);
      assert.equal(run.code, 0, run.stderr.slice(-2000));
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
      try {
        const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
        const problems: string[] = [];
        page.on("console", (m) => {
          if (m.type() === "error" || m.type() === "warning")
            problems.push(`console ${m.type()}: ${m.text()}`);
        });
        page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
        page.on("requestfailed", (r) => problems.push(`failed load: ${r.url()}`));
        await page.goto(pathToFileURL(join(out, "index.html")).href, { waitUntil: "load" });
        assert.match(await page.title(), /benchmark/i);
        const images = await page.$$eval("img", (imgs) =>
          imgs.map((i) => ({ src: i.getAttribute("src"), ok: i.complete && i.naturalWidth > 0 })),
        );
        assert.ok(images.length >= 2, `charts on the page: ${JSON.stringify(images)}`);
        for (const i of images) assert.ok(i.ok, `chart ${String(i.src)} loaded`);
        assert.ok((await page.$$("table")).length >= 3);
        const shot = join(out, "screenshot.png");
        await page.screenshot({ path: shot, fullPage: true });
        assert.ok(statSync(shot).size > 10_000, "screenshot written");
        assert.deepEqual(problems, []);
      } finally {
        await browser.close();
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  },
);
