import { create } from "@bufbuild/protobuf";
import { type WriteRequest, type WriteResponse, WriteResponseSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded } from "../limits.js";
import { prepareRequestLog } from "../write/prepare-request-log.js";
import type { UnaryHandler } from "./call-context.js";
import type { ServiceDeps } from "./log-service.js";

/** Write: a batch of request records, each validated before any is stored. */
export function createWriteHandler({ store, limits }: ServiceDeps): UnaryHandler<WriteRequest, WriteResponse> {
  return async (request, call) => {
    if (request.log.length > limits.maxRecordsPerWrite) {
      throw exceeded(limits, "maxRecordsPerWrite", request.log.length, "number of records in Write");
    }
    call.authorize(new Set(request.log.map((log) => log.appId)));
    const records = request.log.map((log, i) => prepareRequestLog(log, limits, `log[${i}]`));
    const result = await store.write(records, call.signal);
    return create(WriteResponseSchema, result);
  };
}
