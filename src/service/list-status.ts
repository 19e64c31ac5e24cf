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
}: ServiceDeps): UnaryHandler<ListStatusRequest, ListStatusResponse> {
  return async (request) => {
    if (!isFieldSet(request, ListStatusRequestSchema.field.appId) || request.appId === "") {
      throw ReqlogError.invalid("required field not set: app_id");
    }
    const status = store.listStatus({
      appId: request.appId,
      moduleId: isFieldSet(request, ListStatusRequestSchema.field.moduleId) ? request.moduleId : undefined,
      versionId: isFieldSet(request, ListStatusRequestSchema.field.versionId) ? request.versionId : undefined,
    });
    return create(ListStatusResponseSchema, { status });
  };
}
