import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import type { LogServiceClient } from "../../src/client/log-service-client.js";

/**
 * Every stored request of an app (in progress too), with its app lines,
 * newest first, following Read's offsets page after page.
 */
export async function readAll(client: Pick<LogServiceClient, "read">, appId: string): Promise<RequestLog[]> {
  const all: RequestLog[] = [];
  let offset: Uint8Array | undefined;
  do {
    const page = await client.read({
      appId,
      count: 1000n,
      includeAppLogs: true,
      includeIncomplete: true,
      ...(offset ? { offset: { requestId: offset } } : {}),
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

/** A request id as text. */
export const idOf = (log: Pick<RequestLog, "requestId">) => new TextDecoder().decode(log.requestId);
