import { fromJsonString, toBinary } from "@bufbuild/protobuf";
import { UserAppLogGroupSchema } from "../../gen/reqlog/v1/log_service_pb.js";

/**
 * `reqlog encode-log-group JSON`: the base64 of a serialized UserAppLogGroup,
 * ready for FlushRequest.logs in grpcurl's JSON (bytes are base64 there).
 */
export function encodeLogGroup(json: string): string {
  const group = fromJsonString(UserAppLogGroupSchema, json);
  return Buffer.from(toBinary(UserAppLogGroupSchema, group)).toString("base64");
}
