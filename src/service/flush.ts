import { create, fromBinary } from "@bufbuild/protobuf";
import { type Empty, EmptySchema } from "@bufbuild/protobuf/wkt";
import { type FlushRequest, UserAppLogGroupSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { ReqlogError } from "../reqlog-error.js";
import { missingRequiredFields } from "../write/required-fields.js";
import { verifyUtf8 } from "../write/strict-utf8.js";
import { checkLines, fromUserAppLogLines } from "../write/validate-lines.js";
import type { UnaryHandler } from "./call-context.js";
import { requestContext } from "./call-metadata.js";
import type { ServiceDeps } from "./service-deps.js";

verifyUtf8(UserAppLogGroupSchema);

/** Flush: the app lines of the request named by the call metadata. */
export function createFlushHandler({ store, limits, privacy }: ServiceDeps): UnaryHandler<FlushRequest, Empty> {
  return async (request, call) => {
    const context = requestContext(call.metadata, call.defaultApp);
    call.authorize([context.appId]);
    let group;
    try {
      group = fromBinary(UserAppLogGroupSchema, request.logs);
    } catch (err) {
      throw ReqlogError.invalid(
        `cannot decode FlushRequest.logs as a UserAppLogGroup: ${err instanceof Error ? err.message : err}`,
      );
    }
    const missing = missingRequiredFields(UserAppLogGroupSchema, group);
    if (missing.length > 0) {
      throw ReqlogError.invalid(`FlushRequest.logs: required fields not set: ${missing.join(", ")}`);
    }
    const lines = checkLines(fromUserAppLogLines(group.logLine), limits, privacy, "log_line");
    await store.flush(context, lines, call.signal);
    return create(EmptySchema);
  };
}
