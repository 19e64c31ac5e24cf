import { type DescFile, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { Server } from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";
import { file_grpc_reflection_v1_reflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { file_grpc_reflection_v1alpha_reflection } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { file_google_rpc_status } from "../../gen/google/rpc/status_pb.js";
import { file_health_v1_health } from "../../gen/health/v1/health_pb.js";
import { file_reqlog_v1_log_service } from "../../gen/reqlog/v1/log_service_pb.js";
import { file_opentelemetry_proto_collector_logs_v1_logs_service } from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";

/**
 * The files that reflection describes: ours, OTLP's logs service, health,
 * reflection itself, and google.rpc.Status/ErrorInfo so clients can decode
 * error details.
 */
const servedFiles = [
  file_reqlog_v1_log_service,
  file_opentelemetry_proto_collector_logs_v1_logs_service,
  file_google_rpc_status,
  file_health_v1_health,
  file_grpc_reflection_v1_reflection,
  file_grpc_reflection_v1alpha_reflection,
];

/** A file and everything it imports, each once. */
function withDependencies(files: readonly DescFile[], seen = new Map<string, DescFile>()): DescFile[] {
  for (const file of files) {
    if (seen.has(file.name)) continue;
    seen.set(file.name, file);
    withDependencies(file.dependencies, seen);
  }
  return [...seen.values()];
}

/**
 * Adds gRPC server reflection (v1 and v1alpha) fed with the Buf descriptors,
 * so grpcurl and buf curl can list, describe and call with no .proto file.
 * @grpc/reflection reads only `fileDescriptorProtos` from the package
 * definition it is given (see TOOLCHAIN.md), so that is all we hand it.
 */
export function addReflection(server: Server): void {
  const fileDescriptorProtos = withDependencies(servedFiles).map((file) =>
    Buffer.from(toBinary(FileDescriptorProtoSchema, file.proto)),
  );
  const packageDefinition = { files: { fileDescriptorProtos } };
  new ReflectionService(packageDefinition as unknown as ConstructorParameters<typeof ReflectionService>[0]).addToServer(
    server,
  );
}
