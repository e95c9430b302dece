// @pure
/**
 * Every wire schema accepts the spec's own examples, rejects each required field missing or
 * mistyped, and (answers, requests alike) keeps unknown keys: receivers MUST tolerate them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { z } from "zod";
import {
  A2CSkillRefSchema,
  CallToolResultSchema,
  EnterOfficeNotificationSchema,
  EnterOfficeReqSchema,
  ErrorPayloadSchema,
  GetBlobReqSchema,
  GetBlobRetSchema,
  GetSkillReqSchema,
  GetSkillRetSchema,
  GetSkillsReqSchema,
  GetSkillsRetSchema,
  GetToolsReqSchema,
  GetToolsRetSchema,
  LeaveOfficeReqSchema,
  ListRoomReqSchema,
  ListRoomRetSchema,
  SMCPToolSchema,
  ToolCallCancelSchema,
  ToolCallReqSchema,
  UpdateComputerConfigReqSchema,
} from "../../protocol/index.ts";

const sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const base = { agent: "agent-1", req_id: "r-1", computer: "c-1" };

interface Case {
  name: string;
  schema: z.ZodType;
  example: Record<string, unknown>;
  /** Required fields: removing any one must fail. */
  required: string[];
  /** A wrong-typed value per field that must fail. */
  mistyped: Record<string, unknown>;
}

const tool = {
  name: "demo__png",
  bundle_id: "demo",
  description: "Draws a PNG",
  params_schema: { type: "object", properties: { width: { type: "integer" } } },
  return_schema: null,
  meta: { a2c_tool_meta: '{"tags":["image"]}', MCP_TOOL_ANNOTATION: null },
};
const skillRef = {
  name: "tools:pdf-fill",
  source: "marketplace:acme",
  path: "/home/u/.a2c/skills/marketplace/acme/tools/pdf-fill",
  description: "Fill PDF forms",
  license: "MIT",
  allowed_tools: ["Read"],
  skill_metadata: { owner: "x" },
  version: "1.2.0",
};

const cases: Case[] = [
  {
    name: "EnterOfficeReq",
    schema: EnterOfficeReqSchema,
    example: { role: "computer", name: "c-1", office_id: "office-uuid" },
    required: ["role", "name", "office_id"],
    mistyped: { role: "admin", name: 7, office_id: null },
  },
  {
    name: "LeaveOfficeReq",
    schema: LeaveOfficeReqSchema,
    example: { office_id: "office-uuid" },
    required: ["office_id"],
    mistyped: { office_id: 1 },
  },
  {
    name: "EnterOfficeNotification",
    schema: EnterOfficeNotificationSchema,
    example: { office_id: "o", computer: "c-1", agent: null },
    required: ["office_id"],
    mistyped: { office_id: 3, computer: 5 },
  },
  {
    name: "UpdateComputerConfigReq",
    schema: UpdateComputerConfigReqSchema,
    example: { computer: "c-1" },
    required: ["computer"],
    mistyped: { computer: [] },
  },
  {
    name: "ToolCallCancel",
    schema: ToolCallCancelSchema,
    example: { agent: "agent-1", req_id: "r-9" },
    required: ["agent", "req_id"],
    mistyped: { agent: 1, req_id: {} },
  },
  {
    name: "ListRoomReq",
    schema: ListRoomReqSchema,
    example: { agent: "agent-1", req_id: "r", office_id: "o" },
    required: ["agent", "req_id", "office_id"],
    mistyped: { office_id: false },
  },
  {
    name: "ListRoomRet",
    schema: ListRoomRetSchema,
    example: {
      sessions: [
        { sid: "s1", name: "c-1", role: "computer", office_id: "o", a2c_version: "0.3.0" },
      ],
      req_id: "r",
    },
    required: ["sessions", "req_id"],
    mistyped: { sessions: {}, req_id: 1 },
  },
  {
    name: "GetToolsReq",
    schema: GetToolsReqSchema,
    example: { ...base },
    required: ["agent", "req_id", "computer"],
    mistyped: { agent: 1, req_id: null, computer: {} },
  },
  {
    name: "SMCPTool",
    schema: SMCPToolSchema,
    example: tool,
    required: ["name", "bundle_id", "description", "params_schema"],
    mistyped: { name: 1, bundle_id: "", params_schema: "x", meta: { k: { nested: 1 } } },
  },
  {
    name: "GetToolsRet",
    schema: GetToolsRetSchema,
    example: { tools: [tool], req_id: "r-1" },
    required: ["tools", "req_id"],
    mistyped: { tools: [{ name: "x" }] },
  },
  {
    name: "ToolCallReq",
    schema: ToolCallReqSchema,
    example: { ...base, tool_name: "demo__png", params: { width: 10 }, timeout: 30 },
    required: ["agent", "req_id", "computer", "tool_name", "params", "timeout"],
    mistyped: { tool_name: "", params: [], timeout: 1.5 },
  },
  {
    name: "CallToolResult",
    schema: CallToolResultSchema,
    example: {
      content: [
        { type: "text", text: "done" },
        { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
        {
          type: "image",
          data: "",
          mimeType: "image/png",
          _meta: { a2c_blob_handle: "h", a2c_total_size: 5_000_000, a2c_sha256: sha },
        },
        { type: "audio", data: "AAAA", mimeType: "audio/wav" },
        {
          type: "resource",
          resource: { uri: "file:///a.txt", mimeType: "text/plain", text: "hi" },
        },
        { type: "resource", resource: { uri: "file:///b.bin", blob: "AAEC" } },
        { type: "resource_link", uri: "file:///c", name: "c" },
      ],
      isError: false,
      meta: { a2c_cancelled: true, a2c_cancel_reason: "agent_requested" },
    },
    required: ["content"],
    mistyped: { content: {}, isError: "no", meta: { a2c_timeout: "yes" } },
  },
  {
    name: "GetSkillsReq",
    schema: GetSkillsReqSchema,
    example: { ...base },
    required: ["agent", "req_id", "computer"],
    mistyped: { computer: 9 },
  },
  {
    name: "A2CSkillRef",
    schema: A2CSkillRefSchema,
    example: skillRef,
    required: ["name", "source", "path", "description"],
    mistyped: { name: "", allowed_tools: "Read", skill_metadata: 3 },
  },
  {
    name: "GetSkillsRet",
    schema: GetSkillsRetSchema,
    example: { skills: [skillRef], req_id: "r-1" },
    required: ["skills", "req_id"],
    mistyped: { skills: [{ name: "x" }] },
  },
  {
    name: "GetSkillReq",
    schema: GetSkillReqSchema,
    example: { ...base, name: "tools:pdf-fill", rel_path: "references/form.pdf" },
    required: ["agent", "req_id", "computer", "name"],
    mistyped: { name: 5, rel_path: ["a"] },
  },
  {
    name: "GetSkillRet (body)",
    schema: GetSkillRetSchema,
    example: {
      name: "tools:pdf-fill",
      rel_path: "SKILL.md",
      mime_type: "text/markdown",
      total_size: 0,
      sha256: sha,
      body: "",
      req_id: "r-1",
    },
    required: ["name", "rel_path", "mime_type", "total_size", "sha256", "req_id"],
    mistyped: { total_size: -1, sha256: "ABC", body: 3 },
  },
  {
    name: "GetBlobReq",
    schema: GetBlobReqSchema,
    example: { ...base, blob_handle: "opaque", chunk_offset: 0, max_chunk_bytes: 65536 },
    required: ["agent", "req_id", "computer", "blob_handle"],
    mistyped: { blob_handle: 1, chunk_offset: 1.5, max_chunk_bytes: "10", blob_format: "gzip" },
  },
  {
    name: "GetBlobRet",
    schema: GetBlobRetSchema,
    example: {
      blob_handle: "opaque",
      mime_type: "image/png",
      total_size: 3,
      sha256: sha,
      chunk_offset: 0,
      eof: true,
      blob: "AAEC",
      req_id: "r-1",
    },
    required: [
      "blob_handle",
      "mime_type",
      "total_size",
      "sha256",
      "chunk_offset",
      "eof",
      "blob",
      "req_id",
    ],
    mistyped: { total_size: "3", chunk_offset: -1, eof: 1, blob: 5, sha256: 7 },
  },
  {
    name: "ErrorPayload",
    schema: ErrorPayloadSchema,
    example: { code: 4018, message: "Blob not accessible", details: { reason: "gone" } },
    required: ["code", "message"],
    mistyped: { code: "4018", message: 1, details: "x" },
  },
];

for (const c of cases) {
  void test(`${c.name}: accepts the spec example and keeps unknown keys`, () => {
    const parsed = c.schema.safeParse({ ...c.example, future_field: { x: 1 } });
    assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
    assert.deepEqual((parsed.data as Record<string, unknown>).future_field, { x: 1 });
  });

  void test(`${c.name}: rejects each required field missing`, () => {
    for (const field of c.required) {
      const copy: Record<string, unknown> = { ...c.example };
      delete copy[field];
      assert.equal(c.schema.safeParse(copy).success, false, `missing ${field}`);
    }
  });

  void test(`${c.name}: rejects each mistyped field`, () => {
    for (const [field, value] of Object.entries(c.mistyped)) {
      const copy = { ...c.example, [field]: value };
      assert.equal(c.schema.safeParse(copy).success, false, `${field}=${JSON.stringify(value)}`);
    }
  });
}

void test("GetSkillRet needs exactly one of body / blob_handle", () => {
  const ok = {
    name: "a",
    rel_path: "x.png",
    mime_type: "image/png",
    total_size: 1,
    sha256: sha,
    req_id: "r",
  };
  assert.equal(GetSkillRetSchema.safeParse(ok).success, false, "neither");
  assert.equal(
    GetSkillRetSchema.safeParse({ ...ok, body: "a", blob_handle: "h" }).success,
    false,
    "both",
  );
  assert.equal(GetSkillRetSchema.safeParse({ ...ok, blob_handle: "h" }).success, true);
});

void test("GetBlobReq lets a negative offset through (4018 range, not 400) and huge integers", () => {
  const r = GetBlobReqSchema.safeParse({
    ...base,
    blob_handle: "h",
    chunk_offset: -1,
    max_chunk_bytes: 2 ** 60,
  });
  assert.ok(r.success);
  assert.ok(
    GetBlobReqSchema.safeParse({ ...base, blob_handle: "h", blob_format: "binary" }).success,
  );
});

void test("GetBlobRet accepts binary carriage (D19)", () => {
  const r = GetBlobRetSchema.safeParse({
    ...cases.find((c) => c.name === "GetBlobRet")!.example,
    blob: Buffer.from([1, 2, 3]),
    blob_format: "binary",
  });
  assert.ok(r.success);
});

void test("identifier lengths are bounded", () => {
  assert.equal(
    GetBlobReqSchema.safeParse({ ...base, blob_handle: "h".repeat(5000) }).success,
    false,
  );
  assert.equal(GetToolsReqSchema.safeParse({ ...base, req_id: "r".repeat(300) }).success, false);
});
