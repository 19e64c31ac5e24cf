import { create } from "@bufbuild/protobuf";
import {
  LogOffsetSchema,
  type LogReadRequest,
  type LogReadResponse,
  LogReadResponseSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { planRead } from "../query/read-plan.js";
import type { Cursor } from "../domain/positions.js";
import type { UnaryHandler } from "./call-context.js";
import type { HandlerDeps } from "./service-deps.js";

/** Read: request records newest first, one page, each with the offset that continues after it. */
export function createReadHandler({ store, limits, offsets: offsetCodec }: HandlerDeps): UnaryHandler<LogReadRequest, LogReadResponse> {
  return async (request, call) => {
    const offsets = await offsetCodec();
    const plan = planRead(request, limits, offsets);
    call.authorize([plan.appId]);
    const result = await store.read(plan, call.signal);
    const offset = (cursor: Cursor) => create(LogOffsetSchema, { requestId: offsets.encode(plan.appId, cursor) });
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
