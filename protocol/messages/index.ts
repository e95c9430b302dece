export * from "./common.ts";
export * from "./office.ts";
export * from "./tool.ts";
export * from "./skill.ts";
export * from "./blob.ts";
export * from "./upload.ts";
export * from "./config.ts";
