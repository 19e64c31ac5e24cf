import { create } from "@bufbuild/protobuf";
import { type WriteRequest, type WriteResponse, WriteResponseSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded } from "../limits.js";
import { prepareRequestLog } from "../write/prepare-request-log.js";
import type { ServiceDeps, UnaryHandler } from "./handler.js";

/** Write: a batch of request records, each validated before any is stored. */
export function createWriteHandler({ store, limits, auth }: ServiceDeps): UnaryHandler<WriteRequest, WriteResponse> {
  return async (request, call) => {
    const principal = auth.authenticate(call.metadata);
    if (request.log.length > limits.maxRecordsPerWrite) {
      throw exceeded(limits, "maxRecordsPerWrite", request.log.length, "number of records in Write");
    }
    auth.authorize(principal, "write", new Set(request.log.map((log) => log.appId)));
    const records = request.log.map((log, i) => prepareRequestLog(log, limits, `log[${i}]`));
    const result = await store.write(records);
    return create(WriteResponseSchema, result);
  };
}
