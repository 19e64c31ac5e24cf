import { create, isFieldSet } from "@bufbuild/protobuf";
import {
  type ListStatusRequest,
  ListStatusRequestSchema,
  type ListStatusResponse,
  ListStatusResponseSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { ReqlogError } from "../reqlog-error.js";
import type { UnaryHandler } from "./call-context.js";
import type { ServiceDeps } from "./service-deps.js";

/** ListStatus: what SetStatus stored, for one app. */
export function createListStatusHandler({ statuses }: ServiceDeps): UnaryHandler<ListStatusRequest, ListStatusResponse> {
  return async (request, call) => {
    if (!isFieldSet(request, ListStatusRequestSchema.field.appId) || request.appId === "") {
      throw ReqlogError.invalid("required field not set: app_id");
    }
    call.authorize([request.appId]);
    const status = await statuses.listStatus(
      {
        appId: request.appId,
        moduleId: isFieldSet(request, ListStatusRequestSchema.field.moduleId) ? request.moduleId : undefined,
        versionId: isFieldSet(request, ListStatusRequestSchema.field.versionId) ? request.versionId : undefined,
      },
      call.signal,
    );
    return create(ListStatusResponseSchema, { status });
  };
}
