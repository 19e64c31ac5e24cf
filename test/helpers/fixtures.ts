import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";

export const t0 = 1_795_000_000_000_000n;

/** A minimal valid request record (only the fields a writer must give), overridable. */
type LogInit = Exclude<MessageInitShape<typeof RequestLogSchema>, RequestLog>;

export function minimalLog(init: Omit<LogInit, "$typeName"> = {}): RequestLog {
  return create(RequestLogSchema, {
    appId: "forge",
    versionId: "v1",
    requestId: new TextEncoder().encode("req-1"),
    startTime: t0,
    method: "GET",
    resource: "/api/v1/repos/alice/app",
    ...init,
  });
}

export function rid(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}
