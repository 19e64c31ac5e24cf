import { create, fromBinary } from "@bufbuild/protobuf";
import { type Empty, EmptySchema } from "@bufbuild/protobuf/wkt";
import { type FlushRequest, UserAppLogGroupSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { verifyUtf8 } from "../grpc/strict-utf8.js";
import { ReqlogError } from "../reqlog-error.js";
import { missingRequiredFields } from "../write/required-fields.js";
import { checkLines, fromUserAppLogLines } from "../write/validate-lines.js";
import { requestContext } from "./call-metadata.js";
import type { ServiceDeps, UnaryHandler } from "./handler.js";

verifyUtf8(UserAppLogGroupSchema);

/** Flush: the app lines of the request named by the call metadata. */
export function createFlushHandler({ store, limits, auth }: ServiceDeps): UnaryHandler<FlushRequest, Empty> {
  return async (request, call) => {
    const principal = auth.authenticate(call.metadata);
    const context = requestContext(call.metadata, auth.defaultApp(principal));
    auth.authorize(principal, "write", [context.appId]);
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
    const lines = checkLines(fromUserAppLogLines(group.logLine), limits, "log_line");
    await store.flush(context, lines);
    return create(EmptySchema);
  };
}
