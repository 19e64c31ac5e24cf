import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import { create, createRegistry, fromBinary, fromJson, type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import type { Logger } from "pino";
import {
  type ExportLogsServiceResponse,
  ExportLogsServiceRequestSchema,
  ExportLogsServiceResponseSchema,
} from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { ErrorInfoSchema, RetryInfoSchema, StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { exceeded } from "../limits.js";
import { Code, ReqlogError } from "../reqlog-error.js";
import { type CallObserver, callFailure, errorDetails } from "../service/call-outcome.js";
import { createCallRunner, oneRequest, unaryReply } from "../service/call-runner.js";
import { type LogServiceCore, LogsService, otlpMethodAccess } from "../service/log-service.js";
import { headerMetadata } from "./header-metadata.js";
import { strictUtf8 } from "./strict-utf8.js";
import type { HttpRequest, HttpResponse, PageHandler } from "./http-server.js";

/** Where OTLP/HTTP exporters send logs (OTEL_EXPORTER_OTLP_ENDPOINT + /v1/logs). */
export const otlpLogsPath = "/v1/logs";

const protobufType = "application/x-protobuf";
const jsonType = "application/json";
const registry = createRegistry(ErrorInfoSchema, RetryInfoSchema);
const gunzipAsync = promisify(gunzip);

/** HTTP statuses of failures, as OTLP/HTTP clients read them: 429, 502, 503 and 504 are retried. */
const httpStatus: Partial<Record<Code, number>> = {
  [Code.INVALID_ARGUMENT]: 400,
  [Code.UNAUTHENTICATED]: 401,
  [Code.PERMISSION_DENIED]: 403,
  [Code.UNAVAILABLE]: 503,
  [Code.CANCELLED]: 499,
};

/** A rate limit (it says when to retry) is 429, retried; a size limit 413, which a retry cannot pass. */
function statusOf(error: ReqlogError): number {
  if (error.code === Code.RESOURCE_EXHAUSTED) return error.retryAfterMs !== undefined ? 429 : 413;
  return httpStatus[error.code] ?? 500;
}

/**
 * OTLP/JSON writes trace and span ids as hex, where protobuf's JSON mapping
 * has base64: turn them into base64 before decoding.
 */
function hexIdsToBase64(body: unknown): void {
  const resourceLogs = (body as { resourceLogs?: unknown })?.resourceLogs;
  if (!Array.isArray(resourceLogs)) return;
  resourceLogs.forEach((rl: { scopeLogs?: unknown }, i) => {
    if (!Array.isArray(rl?.scopeLogs)) return;
    rl.scopeLogs.forEach((sl: { logRecords?: unknown }, j) => {
      if (!Array.isArray(sl?.logRecords)) return;
      sl.logRecords.forEach((record: Record<string, unknown>, k) => {
        for (const key of ["traceId", "spanId"]) {
          const value = record?.[key];
          if (value === undefined || value === "") continue;
          if (typeof value !== "string" || !/^([0-9a-fA-F]{2})*$/.test(value)) {
            throw ReqlogError.invalid(`resourceLogs[${i}].scopeLogs[${j}].logRecords[${k}].${key} is not hex: ${JSON.stringify(value)}`);
          }
          record[key] = Buffer.from(value, "hex").toString("base64");
        }
      });
    });
  });
}

const tooLarge = (maxBytes: number, what: string) =>
  exceeded({ maxMessageBytes: maxBytes }, "maxMessageBytes", `more than ${maxBytes}`, what);

async function readBody(request: HttpRequest, maxBytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let length = 0;
  for await (const part of request as AsyncIterable<Buffer>) {
    length += part.length;
    if (length > maxBytes) throw tooLarge(maxBytes, "the request body's size in bytes");
    parts.push(part);
  }
  return Buffer.concat(parts, length);
}

/** The request's body, decompressed and decoded as the Content-Type says. */
async function decode(request: HttpRequest, json: boolean, maxBytes: number) {
  let body = await readBody(request, maxBytes);
  const encoding = String(request.headers["content-encoding"] ?? "identity").toLowerCase();
  if (encoding === "gzip") {
    try {
      body = await gunzipAsync(body, { maxOutputLength: maxBytes });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ERR_BUFFER_TOO_LARGE") throw tooLarge(maxBytes, "the request body's size in bytes once decompressed");
      throw ReqlogError.invalid(`cannot gunzip the request body: ${(err as Error).message}`);
    }
  } else if (encoding !== "identity") {
    throw ReqlogError.invalid(`Content-Encoding ${encoding} is not supported (gzip or none)`);
  }
  try {
    if (!json) return fromBinary(ExportLogsServiceRequestSchema, body, { readUnknownFields: false });
    const text = strictUtf8(body);
    if (text === undefined) throw ReqlogError.invalid("cannot decode ExportLogsServiceRequest (JSON): the body is not UTF-8");
    const parsed = JSON.parse(text) as JsonValue;
    hexIdsToBase64(parsed);
    return fromJson(ExportLogsServiceRequestSchema, parsed, { ignoreUnknownFields: true });
  } catch (err) {
    if (err instanceof ReqlogError) throw err;
    throw ReqlogError.invalid(`cannot decode ExportLogsServiceRequest (${json ? "JSON" : "protobuf"}): ${(err as Error).message}`);
  }
}

function send(response: HttpResponse, status: number, json: boolean, body: Uint8Array | string, headers: Record<string, string> = {}) {
  response.writeHead(status, { "content-type": json ? jsonType : protobufType, ...headers });
  response.end(body);
}

/**
 * OTLP/HTTP logs: `POST /v1/logs` with an ExportLogsServiceRequest as
 * protobuf (application/x-protobuf) or OTLP JSON (application/json, hex
 * trace and span ids, 64-bit integers as strings or numbers), gzip or not.
 * The reply is an ExportLogsServiceResponse in the same encoding (with
 * partial_success when records were rejected); a failure is a
 * google.rpc.Status with the same ErrorInfo as the gRPC port, under an HTTP
 * status OTLP clients act on (400 not retried; 429 and 503 retried, with
 * Retry-After for a rate limit). The same tokens, limits and handler as
 * LogsService/Export on the gRPC port.
 */
export function otlpHttpPage(core: LogServiceCore, options: { logger: Logger; observer?: CallObserver; maxBytes: number }): PageHandler {
  const { run } = createCallRunner({
    service: LogsService,
    handlers: core.otlp,
    access: otlpMethodAccess,
    auth: core.auth,
    logger: options.logger,
    observer: options.observer,
    transport: "http",
  }).method("export");
  return async (request, response) => {
    const path = (request.url ?? "").replace(/\?.*$/s, "");
    if (path !== otlpLogsPath) return false;
    if (request.method !== "POST") {
      response.writeHead(405, { allow: "POST", "content-type": "text/plain; charset=utf-8" });
      response.end(`${otlpLogsPath} takes POST\n`);
      return true;
    }
    const type = String(request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== protobufType && type !== jsonType) {
      response.writeHead(415, { "content-type": "text/plain; charset=utf-8" });
      response.end(`${otlpLogsPath} takes ${protobufType} or ${jsonType}, not ${type || "a body without Content-Type"}\n`);
      return true;
    }
    const json = type === jsonType;
    const closed = new AbortController();
    response.once("close", () => {
      if (!response.writableFinished) closed.abort();
    });
    try {
      const headers = new Headers();
      for (const [key, value] of Object.entries(request.headers)) {
        if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(", ") : value);
      }
      const call = { metadata: headerMetadata(headers), signal: closed.signal };
      const reply = (await unaryReply(run(call, oneRequest(() => decode(request, json, options.maxBytes))))) as ExportLogsServiceResponse;
      send(response, 200, json, json ? JSON.stringify(toJson(ExportLogsServiceResponseSchema, reply)) : toBinary(ExportLogsServiceResponseSchema, reply));
    } catch (err) {
      // The runner's failures come logged; anything else failed before the call was run.
      const error = err instanceof ReqlogError ? err : callFailure(err, LogsService.method.export.name, options.logger);
      const status = create(StatusSchema, {
        code: error.code,
        message: error.message,
        details: errorDetails(error).map(({ desc, value }) => anyPack(desc, value as never)),
      });
      const retry: Record<string, string> = error.retryAfterMs !== undefined ? { "retry-after": String(Math.ceil(error.retryAfterMs / 1000)) } : {};
      send(
        response,
        statusOf(error),
        json,
        json ? JSON.stringify(toJson(StatusSchema, status, { registry })) : toBinary(StatusSchema, status),
        retry,
      );
    }
    return true;
  };
}
