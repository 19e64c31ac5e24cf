import { create, type DescService, fromBinary } from "@bufbuild/protobuf";
import { FieldDescriptorProto_Label, FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import * as reflectionV1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/health/v1/health_pb.js";
import { LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
// Registered after the server's hooks, so run before it stops.
const sessions: Http2SessionManager[] = [];
afterEach(() => {
  for (const s of sessions.splice(0)) s.abort();
});

/** A generated client of one of the server's other services, over gRPC as the LogService client speaks it. */
function client<S extends DescService>(service: S): Client<S> {
  const baseUrl = `http://${ts.server.address}`;
  const sessionManager = new Http2SessionManager(baseUrl);
  sessions.push(sessionManager);
  return createClient(service, createGrpcTransport({ baseUrl, sessionManager }));
}

type Reflection = typeof reflectionV1 | typeof reflectionV1alpha;

/** One request/response exchange on the bidi reflection stream. */
async function reflect(version: Reflection, messageRequest: reflectionV1.ServerReflectionRequest["messageRequest"]) {
  // v1 and v1alpha have the same shape; the descriptors (not the types) decide the wire names.
  const v = version as typeof reflectionV1;
  async function* requests() {
    yield create(v.ServerReflectionRequestSchema, { messageRequest });
  }
  for await (const response of client(v.ServerReflection).serverReflectionInfo(requests())) return response;
  throw new Error("the reflection stream ended without a response");
}

describe.each([
  ["v1", reflectionV1],
  ["v1alpha", reflectionV1alpha],
] as const)("server reflection %s", (_name, version) => {
  it("lists the LogService, OTLP's LogsService, health and reflection", async () => {
    const response = await reflect(version, { case: "listServices", value: "" });
    if (response.messageResponse.case !== "listServicesResponse") throw new Error(`unexpected ${response.messageResponse.case}`);
    expect(response.messageResponse.value.service.map((s) => s.name).sort()).toEqual([
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      "opentelemetry.proto.collector.logs.v1.LogsService",
      "reqlog.v1.LogService",
    ]);
  });

  it("describes OTLP's LogsService with partial_success in its reply", async () => {
    const response = await reflect(version, { case: "fileContainingSymbol", value: "opentelemetry.proto.collector.logs.v1.LogsService" });
    if (response.messageResponse.case !== "fileDescriptorResponse") throw new Error(`unexpected ${response.messageResponse.case}`);
    const files = response.messageResponse.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
    const main = files.find((f) => f.name === "opentelemetry/proto/collector/logs/v1/logs_service.proto");
    expect(main?.service[0]?.method.map((m) => m.name)).toEqual(["Export"]);
    expect(main?.messageType.find((m) => m.name === "ExportLogsServiceResponse")?.field.map((f) => f.name)).toEqual(["partial_success"]);
    expect(files.map((f) => f.name)).toEqual(
      expect.arrayContaining(["opentelemetry/proto/logs/v1/logs.proto", "opentelemetry/proto/common/v1/common.proto", "opentelemetry/proto/resource/v1/resource.proto"]),
    );
  });

  it("describes the LogService from its proto2 file, with its dependencies", async () => {
    const response = await reflect(version, { case: "fileContainingSymbol", value: "reqlog.v1.LogService" });
    if (response.messageResponse.case !== "fileDescriptorResponse") throw new Error(`unexpected ${response.messageResponse.case}`);
    const files = response.messageResponse.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
    const main = files.find((f) => f.name === "reqlog/v1/log_service.proto");
    // proto2 files leave `syntax` empty; their fields keep the `required` label.
    expect(["", "proto2"]).toContain(main?.syntax);
    expect(main?.service[0]?.method.map((m) => m.name)).toEqual(LogService.methods.map((m) => m.name));
    expect(files.map((f) => f.name)).toContain("google/protobuf/empty.proto");
    const requestLog = main?.messageType.find((m) => m.name === "RequestLog");
    expect(requestLog?.field.find((f) => f.name === "replica_index")?.defaultValue).toBe("-1");
    expect(requestLog?.field.find((f) => f.name === "app_id")?.label).toBe(FieldDescriptorProto_Label.REQUIRED);
  });
});

describe("health", () => {
  it("reports SERVING, then NOT_SERVING once shutdown starts", async () => {
    const health = client(Health);
    for (const service of ["", "reqlog.v1.LogService"]) {
      expect((await health.check({ service })).status).toBe(ServingStatus.SERVING);
    }
    const seen: ServingStatus[] = [];
    let firstReply!: () => void;
    const watching = new Promise<void>((resolve) => (firstReply = resolve));
    // Leaving the loop does not end the call: aborting does (else the shutdown waits for it to time out).
    const cancel = new AbortController();
    const watched = (async () => {
      for await (const reply of health.watch({ service: "reqlog.v1.LogService" }, { signal: cancel.signal })) {
        seen.push(reply.status);
        firstReply();
        if (reply.status === ServingStatus.NOT_SERVING) return;
      }
    })();
    await Promise.race([watching, watched]);
    const stopped = ts.server.shutdown();
    await watched;
    cancel.abort();
    await stopped;
    expect(seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
  });
});
