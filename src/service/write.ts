import { create } from "@bufbuild/protobuf";
import { type WriteRequest, type WriteResponse, WriteResponseSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { prepareWrite } from "../write/prepare-batches.js";
import { preparedWriteOf } from "../write/prepared-requests.js";
import type { UnaryHandler } from "./call-context.js";
import type { ServiceDeps } from "./service-deps.js";

/** Write: a batch of request records, each validated before any is stored. */
export function createWriteHandler({ store, limits, privacy }: ServiceDeps): UnaryHandler<WriteRequest, WriteResponse> {
  return async (request, call) => {
    const batch = preparedWriteOf(request) ?? prepareWrite(request, limits, privacy);
    if (batch.tooMany) throw batch.tooMany;
    call.authorize(batch.apps);
    if (batch.invalid) throw batch.invalid;
    const result = await store.write(batch.records, call.signal);
    return create(WriteResponseSchema, result);
  };
}
