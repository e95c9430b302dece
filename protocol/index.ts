/** The wire contract shared by Server, Computer and Agent. No I/O. */
export * from "./version.ts";
export * from "./events.ts";
export * from "./errors.ts";
export * from "./sizing.ts";
export * from "./messages/index.ts";
export * from "./requests.ts";
export * from "./mime.ts";
