import { create } from "@bufbuild/protobuf";
import { type Empty, EmptySchema } from "@bufbuild/protobuf/wkt";
import { type SetStatusRequest, SetStatusRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { missingRequiredFields } from "../write/required-fields.js";
import { instanceKey } from "./call-metadata.js";
import type { ServiceDeps, UnaryHandler } from "./handler.js";

/** SetStatus: the latest status text of the calling instance. */
export function createSetStatusHandler({ store, limits, auth }: ServiceDeps): UnaryHandler<SetStatusRequest, Empty> {
  return async (request, call) => {
    const principal = auth.authenticate(call.metadata);
    if (missingRequiredFields(SetStatusRequestSchema, request).length > 0) {
      throw ReqlogError.invalid("required field not set: status");
    }
    const instance = instanceKey(call.metadata, auth.defaultApp(principal));
    auth.authorize(principal, "write", [instance.appId]);
    if (request.status.trim() === "") throw ReqlogError.invalid("status is empty");
    const bytes = Buffer.byteLength(request.status, "utf8");
    if (bytes > limits.maxStatusBytes) throw exceeded(limits, "maxStatusBytes", bytes, "status size in bytes");
    await store.setStatus(instance, request.status);
    return create(EmptySchema);
  };
}
