import { create } from "@bufbuild/protobuf";
import { LogOffsetSchema, type RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import type { TestClient } from "./test-client.js";

/** Every stored request of an app (in progress too, with app lines), paging through Read's offsets. */
export async function readAll(client: TestClient, appId: string): Promise<RequestLog[]> {
  const all: RequestLog[] = [];
  let offset: Uint8Array | undefined;
  do {
    const page = await client.read({
      appId,
      count: 1000n,
      includeIncomplete: true,
      includeAppLogs: true,
      ...(offset ? { offset: create(LogOffsetSchema, { requestId: offset }) } : {}),
    });
    all.push(...page.log);
    offset = page.offset?.requestId;
  } while (offset);
  return all;
}

/** Waits until `check` holds, polling every 50 ms; fails with `what` after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
