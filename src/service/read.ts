import { create } from "@bufbuild/protobuf";
import {
  LogOffsetSchema,
  type LogReadRequest,
  type LogReadResponse,
  LogReadResponseSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { createOffsetCodec } from "../query/offset-codec.js";
import { planRead } from "../query/read-plan.js";
import type { ServiceDeps, UnaryHandler } from "./handler.js";

/** Read: request records newest first, one page, each with the offset that continues after it. */
export function createReadHandler({ store, limits, auth }: ServiceDeps): UnaryHandler<LogReadRequest, LogReadResponse> {
  const offsets = createOffsetCodec(store.offsetKey());
  return async (request, call) => {
    const principal = auth.authenticate(call.metadata);
    const plan = planRead(request, limits, offsets);
    auth.authorize(principal, "read", [plan.appId]);
    const result = await store.read(plan);
    const offset = (cursor: Parameters<typeof offsets.encode>[1]) =>
      create(LogOffsetSchema, { requestId: offsets.encode(plan.appId, cursor) });
    return create(LogReadResponseSchema, {
      log: result.records.map(({ log, cursor }) => {
        log.offset = offset(cursor);
        return log;
      }),
      offset: result.next ? offset(result.next) : undefined,
      lastEndTime: result.lastSortTime,
    });
  };
}
