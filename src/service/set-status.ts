import { create } from "@bufbuild/protobuf";
import { type Empty, EmptySchema } from "@bufbuild/protobuf/wkt";
import { type SetStatusRequest, SetStatusRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { missingRequiredFields } from "../write/required-fields.js";
import type { UnaryHandler } from "./call-context.js";
import { instanceKey } from "./call-metadata.js";
import type { ServiceDeps } from "./service-deps.js";

/** SetStatus: the latest status text of the calling instance. */
export function createSetStatusHandler({ statuses, limits }: ServiceDeps): UnaryHandler<SetStatusRequest, Empty> {
  return async (request, call) => {
    if (missingRequiredFields(SetStatusRequestSchema, request).length > 0) {
      throw ReqlogError.invalid("required field not set: status");
    }
    const instance = instanceKey(call.metadata, call.defaultApp);
    call.authorize([instance.appId]);
    if (request.status.trim() === "") throw ReqlogError.invalid("status is empty");
    const bytes = Buffer.byteLength(request.status, "utf8");
    if (bytes > limits.maxStatusBytes) throw exceeded(limits, "maxStatusBytes", bytes, "status size in bytes");
    await statuses.setStatus(instance, request.status, call.signal);
    return create(EmptySchema);
  };
}
