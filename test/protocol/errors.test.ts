// @pure
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  badRequest,
  blobNotAccessible,
  busy,
  computerNotFound,
  ERROR_CODES,
  ErrorCode,
  ErrorPayloadSchema,
  forbidden,
  internalError,
  invalidSkillName,
  invalidVersion,
  isErrorPayload,
  missingVersion,
  notInOffice,
  ProtocolError,
  relayTimeout,
  skillNotFound,
  skillResourceNotAccessible,
  unauthorized,
  versionMismatch,
  VersionMismatchPayloadSchema,
  blobWriteFailed,
  UPLOAD_MESSAGES,
  UploadReason,
  uploadFailureReason,
  type ErrorPayload,
} from "../../protocol/index.ts";

const built: Record<string, ErrorPayload> = {
  badRequest: badRequest(),
  missingVersion: missingVersion(),
  invalidVersion: invalidVersion("abc"),
  versionMismatch: versionMismatch({
    server_version: "0.4.0",
    client_version: "0.3.0",
    min_supported: "0.4.0",
    max_supported: "0.4.999",
  }),
  unauthorized: unauthorized(),
  forbidden: forbidden(),
  notInOffice: notInOffice(),
  computerNotFound: computerNotFound("c1"),
  computerDisconnected: computerNotFound("c1", "disconnected"),
  relayTimeout: relayTimeout("c1"),
  busy: busy(),
  internalError: internalError(),
  invalidSkillName: invalidSkillName("bad name!!"),
  skillNotFound: skillNotFound("ghost"),
  traversal: skillResourceNotAccessible("traversal", "../../etc/passwd"),
  forbiddenFile: skillResourceNotAccessible("forbidden", ".skillenv"),
  notFound: skillResourceNotAccessible("not_found", "x.txt"),
  tooLarge: skillResourceNotAccessible("too_large", "big.bin", 123, 100),
  invalidHandle: blobNotAccessible("invalid_handle"),
  blobForbidden: blobNotAccessible("forbidden"),
  gone: blobNotAccessible("gone"),
  range: blobNotAccessible("range"),
  uploadBusy: blobWriteFailed("busy", UPLOAD_MESSAGES.busy),
  uploadTooLarge: blobWriteFailed("too_large", UPLOAD_MESSAGES.tooLarge, { total_size: 17 }),
  uploadIo: blobWriteFailed("io_error", UPLOAD_MESSAGES.writeFailed, {
    upload_id: "0".repeat(32),
    storage_reason: "storage_full",
  }),
};

void test("every builder's output parses as a flat ErrorPayload", () => {
  for (const [name, payload] of Object.entries(built)) {
    assert.ok(ErrorPayloadSchema.safeParse(payload).success, name);
    assert.ok(isErrorPayload(payload), name);
    assert.equal("error" in payload, false, `${name} has no error wrapper`);
    assert.ok(payload.code in ERROR_CODES, `${name} uses a registered code`);
  }
});

void test("every builder's output round-trips through ProtocolError", () => {
  for (const [name, payload] of Object.entries(built)) {
    const err = ProtocolError.fromWire(payload);
    assert.ok(err instanceof Error);
    assert.equal(err.code, payload.code);
    assert.equal(err.message, payload.message);
    assert.deepEqual(err.toWire(), payload, name);
  }
});

void test("wire shapes match the spec's examples", () => {
  assert.deepEqual(built.missingVersion, {
    code: 400,
    message: "Missing a2c_version query parameter",
  });
  assert.ok(built.invalidVersion!.message.startsWith("Invalid a2c_version"));
  assert.ok(VersionMismatchPayloadSchema.safeParse(built.versionMismatch).success);
  assert.deepEqual(built.computerNotFound, {
    code: 404,
    message: "Computer with name 'c1' not found",
    details: { computer_name: "c1" },
  });
  assert.deepEqual(built.computerDisconnected!.details, {
    computer_name: "c1",
    reason: "disconnected",
  });
  assert.deepEqual(built.skillNotFound, {
    code: 4014,
    message: "Skill not found",
    details: { name: "ghost" },
  });
  assert.deepEqual(built.traversal, {
    code: 4017,
    message: "Skill resource not accessible",
    details: { reason: "traversal", rel_path: "../../etc/passwd" },
  });
  assert.deepEqual(built.tooLarge!.details, {
    reason: "too_large",
    rel_path: "big.bin",
    total_size: 123,
    max_size: 100,
  });
  assert.deepEqual(built.gone, {
    code: 4018,
    message: "Blob not accessible",
    details: { reason: "gone" },
  });
  assert.equal(ProtocolError.fromWire(built.range!).reason, "range");
  // Upstream's cross-SDK byte vector for a 4019.
  assert.equal(
    JSON.stringify(built.uploadBusy),
    '{"code":4019,"message":"too many concurrent uploads","details":{"reason":"busy"}}',
  );
  assert.deepEqual(built.uploadTooLarge!.details, { reason: "too_large", total_size: 17 });
  assert.deepEqual(built.uploadIo!.details, {
    reason: "io_error",
    upload_id: "0".repeat(32),
    storage_reason: "storage_full",
  });
});

void test("a 4019 reason as an Agent reads it: missing is invalid_upload, unknown kept", () => {
  assert.equal(uploadFailureReason(built.uploadBusy!), "busy");
  assert.equal(uploadFailureReason({ code: 4019, message: "x" }), "invalid_upload");
  assert.equal(uploadFailureReason({ code: 4019, message: "x", details: {} }), "invalid_upload");
  assert.equal(
    uploadFailureReason({ code: 4019, message: "x", details: { reason: "quota_exceeded" } }),
    "quota_exceeded",
  );
  assert.deepEqual(Object.values(UploadReason).sort(), [
    "busy",
    "forbidden",
    "integrity",
    "invalid_declaration",
    "invalid_upload",
    "io_error",
    "range",
    "too_large",
  ]);
});

void test("the registry names every code of protocol.md §9.2", () => {
  const expected = [
    400, 401, 403, 404, 408, 500, 4001, 4002, 4003, 4004, 4005, 4006, 4007, 4008, 4014, 4015, 4016,
    4017, 4018, 4019, 4101, 4102, 4103, 4104,
  ];
  assert.deepEqual(
    Object.keys(ERROR_CODES)
      .map(Number)
      .sort((a, b) => a - b),
    expected,
  );
  assert.deepEqual(
    Object.values(ErrorCode).sort((a, b) => a - b),
    expected,
  );
});

void test("isErrorPayload tells errors from success answers", () => {
  assert.equal(isErrorPayload({ skills: [], req_id: "r" }), false);
  assert.equal(isErrorPayload({ content: [], isError: true }), false);
  assert.equal(isErrorPayload({ code: "400", message: "x" }), false);
  assert.equal(isErrorPayload({ code: 4.5, message: "x" }), false);
  assert.equal(isErrorPayload(null), false);
  assert.equal(isErrorPayload([{ code: 1, message: "x" }]), false);
  assert.equal(isErrorPayload({ code: 4999, message: "future code" }), true);
});

void test("ProtocolError keeps code-specific top-level fields", () => {
  const err = ProtocolError.fromWire(built.versionMismatch!);
  assert.equal(err.extra.server_version, "0.4.0");
  assert.equal(err.extra.client_version, "0.3.0");
});
