/**
 * What the transport tests share: a real Server with an Agent in office-1, and Computers with the
 * fast paths each test chooses, serving one file and one in-memory byte string through a
 * `TestProducer`, on WebSocket (after the polling → WebSocket upgrade, as they always connect)
 * unless told otherwise.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunningComputer, StartComputerOptions } from "../../../computer/computer.ts";
import { GetBlobRetSchema } from "../../../protocol/index.ts";
import { emitAck, request, ServerHarness, type Socket } from "../../support/server-harness.ts";
import { producersOnly, startHarnessComputer, upgraded } from "./harness-computer.ts";
import { TestProducer } from "./test-producer.ts";

export interface FixtureComputer {
  readonly pc: RunningComputer;
  /** Handle of the file. */
  readonly file: string;
  /** Handle of the in-memory bytes. */
  readonly memory: string;
}

export class TransportFixture {
  readonly #dir: string;
  readonly #computers: RunningComputer[] = [];

  private constructor(
    readonly h: ServerHarness,
    readonly agent: Socket,
    dir: string,
    readonly fileContent: Buffer,
    readonly memoryContent: Buffer,
  ) {
    this.#dir = dir;
  }

  static async start(
    fileContent: Buffer,
    memoryContent = Buffer.alloc(0),
  ): Promise<TransportFixture> {
    const dir = mkdtempSync(join(tmpdir(), "a2c-transport-"));
    writeFileSync(join(dir, "file.bin"), fileContent);
    const h = await ServerHarness.start();
    const agent = await h.agent("office-1", "agent-1");
    return new TransportFixture(h, agent, dir, fileContent, memoryContent);
  }

  /** A Computer named `name` with `extra` options (fast paths among them), upgraded to WebSocket. */
  async computer(
    name: string,
    extra: Partial<StartComputerOptions> = {},
  ): Promise<FixtureComputer> {
    const producer = new TestProducer();
    const fileId = producer.addFile(join(this.#dir, "file.bin"));
    const memoryId = producer.addBytes(this.memoryContent);
    const pc = await startHarnessComputer(this.h, this.#dir, {
      name,
      stateDir: join(this.#dir, `state-${name}`),
      services: [producersOnly(producer)],
      ...extra,
    });
    this.#computers.push(pc);
    if (!extra.transports || extra.transports.includes("websocket")) await upgraded(pc);
    return {
      pc,
      file: pc.minter.mint("tool", { id: fileId }),
      memory: pc.minter.mint("tool", { id: memoryId }),
    };
  }

  /** One binary chunk of `handle` from Computer `computer`, as the Agent got it. */
  async pull(computer: string, handle: string, offset: number, chunk: number): Promise<Buffer> {
    const req = request("agent-1", computer, {
      blob_handle: handle,
      chunk_offset: offset,
      max_chunk_bytes: chunk,
      blob_format: "binary",
    });
    const [answer] = await emitAck(this.agent, "client:get_blob", req);
    const ret = GetBlobRetSchema.parse(answer);
    if (ret.chunk_offset !== offset) throw new Error(`asked ${offset}, got ${ret.chunk_offset}`);
    return typeof ret.blob === "string" ? Buffer.from(ret.blob, "base64") : Buffer.from(ret.blob);
  }

  async close(): Promise<void> {
    await Promise.all(this.#computers.map((pc) => pc.close()));
    await this.h.close();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
