import { create, isFieldSet } from "@bufbuild/protobuf";
import {
  type ListStatusRequest,
  ListStatusRequestSchema,
  type ListStatusResponse,
  ListStatusResponseSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { ReqlogError } from "../reqlog-error.js";
import type { ServiceDeps, UnaryHandler } from "./handler.js";

/** ListStatus: what SetStatus stored, for one app. */
export function createListStatusHandler({
  store,
  auth,
}: ServiceDeps): UnaryHandler<ListStatusRequest, ListStatusResponse> {
  return async (request, call) => {
    const principal = auth.authenticate(call.metadata);
    if (!isFieldSet(request, ListStatusRequestSchema.field.appId) || request.appId === "") {
      throw ReqlogError.invalid("required field not set: app_id");
    }
    auth.authorize(principal, "read", [request.appId]);
    const status = store.listStatus({
      appId: request.appId,
      moduleId: isFieldSet(request, ListStatusRequestSchema.field.moduleId) ? request.moduleId : undefined,
      versionId: isFieldSet(request, ListStatusRequestSchema.field.versionId) ? request.versionId : undefined,
    });
    return create(ListStatusResponseSchema, { status });
  };
}
