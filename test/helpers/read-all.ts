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

/** A request id as text. */
export const idOf = (log: Pick<RequestLog, "requestId">) => new TextDecoder().decode(log.requestId);
