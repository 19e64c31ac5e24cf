import { create } from "@bufbuild/protobuf";
import { DeleteRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { callFailure, type ClientOptions, createLogServiceClient } from "../client/log-service-client.js";
import { parseTime } from "./read.js";

export interface DeleteOptions extends ClientOptions {
  app: string;
  ip: string[];
  regex?: string;
  from?: string;
  to?: string;
  requestId: string[];
  dryRun: boolean;
  all: boolean;
}

/**
 * `reqlog delete`: erases the app's requests that match every filter given
 * (addresses or ranges, a regex on the combined line, a time window, ids),
 * with their app lines; --dry-run counts them first. Needs an admin token.
 */
export async function deleteCommand(
  options: DeleteOptions,
  print: (text: string) => void = (t) => process.stdout.write(`${t}\n`),
): Promise<void> {
  const now = Date.now();
  const request = create(DeleteRequestSchema, {
    appId: options.app,
    ip: options.ip,
    requestId: options.requestId.map((id) => new TextEncoder().encode(id)),
    ...(options.regex !== undefined ? { combinedLogRegex: options.regex } : {}),
    ...(options.from ? { startTime: parseTime(options.from, "--from", now) } : {}),
    ...(options.to ? { endTime: parseTime(options.to, "--to", now) } : {}),
    dryRun: options.dryRun,
    all: options.all,
  });
  const client = createLogServiceClient(options);
  try {
    const { deleted } = await client.delete(request);
    const n = `${deleted} request${deleted === 1n ? "" : "s"} of app "${options.app}"`;
    print(options.dryRun ? `would delete ${n} (dry run: nothing deleted)` : `deleted ${n}, with ${deleted === 1n ? "its" : "their"} app lines`);
  } catch (err) {
    throw new Error(callFailure(err));
  } finally {
    client.close();
  }
}
