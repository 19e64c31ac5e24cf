import { create, type DescService, fromBinary } from "@bufbuild/protobuf";
import { FieldDescriptorProto_Label, FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { type Client, type ClientDuplexStream, type ClientReadableStream, credentials, makeGenericClientConstructor } from "@grpc/grpc-js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as reflectionV1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import {
  Health,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/health/v1/health_pb.js";
import { LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import { clientDefinition } from "../../src/grpc/service-definition.js";
import { unaryCall, type TestClient } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let ts: TestServer;
const clients: Client[] = [];
beforeEach(async () => {
  ts = await startTestServer();
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await ts.close();
});

function client(service: DescService): TestClient {
  const Ctor = makeGenericClientConstructor(clientDefinition(service), service.typeName);
  const c = new Ctor(ts.server.address, credentials.createInsecure()) as unknown as TestClient;
  clients.push(c);
  return c;
}

type Reflection = typeof reflectionV1 | typeof reflectionV1alpha;

/** One request/response exchange on the bidi reflection stream. */
async function reflect(version: Reflection, messageRequest: { case: string; value: string }) {
  const stream = (client(version.ServerReflection).serverReflectionInfo as () => ClientDuplexStream<unknown, unknown>)();
  const reply = new Promise<reflectionV1.ServerReflectionResponse>((resolve, reject) => {
    stream.once("data", (r) => resolve(r as reflectionV1.ServerReflectionResponse));
    stream.once("error", reject);
  });
  stream.write(create(version.ServerReflectionRequestSchema as typeof reflectionV1.ServerReflectionRequestSchema, {
    messageRequest: messageRequest as reflectionV1.ServerReflectionRequest["messageRequest"],
  }));
  const response = await reply;
  stream.end();
  return response;
}

describe.each([
  ["v1", reflectionV1],
  ["v1alpha", reflectionV1alpha],
] as const)("server reflection %s", (_name, version) => {
  it("lists the LogService, health and reflection", async () => {
    const response = await reflect(version, { case: "listServices", value: "" });
    if (response.messageResponse.case !== "listServicesResponse") throw new Error(`unexpected ${response.messageResponse.case}`);
    expect(response.messageResponse.value.service.map((s) => s.name).sort()).toEqual([
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      "reqlog.v1.LogService",
    ]);
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
      const reply = await unaryCall<HealthCheckResponse>(health, "check", create(HealthCheckRequestSchema, { service }));
      expect(reply.status).toBe(ServingStatus.SERVING);
    }
    const watch = (health.watch as (r: unknown) => ClientReadableStream<HealthCheckResponse>)(
      create(HealthCheckRequestSchema, { service: "reqlog.v1.LogService" }),
    );
    const seen: ServingStatus[] = [];
    const notServing = new Promise<void>((resolve) => {
      watch.on("data", (r: HealthCheckResponse) => {
        seen.push(r.status);
        if (r.status === ServingStatus.NOT_SERVING) resolve();
      });
      watch.on("error", () => undefined);
    });
    await new Promise((r) => setTimeout(r, 50));
    const stopped = ts.server.shutdown();
    await notServing;
    watch.cancel();
    await stopped;
    expect(seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
  });
});
