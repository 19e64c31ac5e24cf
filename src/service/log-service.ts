import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import type { Access, Authorizer } from "../auth/authorizer.js";
import type { Limits } from "../limits.js";
import type { BidiStreamHandler, ServerStreamHandler, UnaryHandler } from "./call-context.js";
import { createAlertsHandler } from "./alerts.js";
import { createDeleteHandler } from "./delete.js";
import { createFlushHandler } from "./flush.js";
import { createIngestHandler } from "./ingest.js";
import { createListStatusHandler } from "./list-status.js";
import { createReadHandler } from "./read.js";
import { createSetStatusHandler } from "./set-status.js";
import { createStatsHandler } from "./stats.js";
import { createQueryHandler } from "./query.js";
import { createTailService } from "./tail.js";
import { createUsageHandler } from "./usage.js";
import { verifyUtf8 } from "../write/strict-utf8.js";
import { lazyOffsetCodec } from "./offsets.js";
import { createWriteHandler } from "./write.js";
import type { HandlerDeps, ServiceDeps } from "./service-deps.js";
import {
  type ExportLogsServiceRequest,
  ExportLogsServiceRequestSchema,
  type ExportLogsServiceResponse,
  LogsService,
} from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { defaultOtlpMapping } from "../ingest/otlp-log-records.js";
import { createOtlpExportHandler } from "./otlp-export.js";

type Methods = (typeof LogService)["method"];
type In<M extends { input: DescMessage }> = MessageShape<M["input"]>;
type Out<M extends { output: DescMessage }> = MessageShape<M["output"]>;

/**
 * The handler of every LogService method, typed from the generated service:
 * whatever the transport (grpc-js, Connect over HTTP), a call is served by
 * one of these.
 */
export type LogServiceHandlers = {
  [K in keyof Methods]: Methods[K]["methodKind"] extends "unary"
    ? UnaryHandler<In<Methods[K]>, Out<Methods[K]>>
    : Methods[K]["methodKind"] extends "server_streaming"
      ? ServerStreamHandler<In<Methods[K]>, Out<Methods[K]>>
      : BidiStreamHandler<In<Methods[K]>, Out<Methods[K]>>;
};

export type MethodName = keyof LogServiceHandlers;

/** The access each method needs (SPEC §7): writes need write:logs, reads read:logs. */
export const methodAccess: Record<MethodName, Access> = {
  flush: "write",
  setStatus: "write",
  write: "write",
  ingest: "write",
  read: "read",
  usage: "read",
  listStatus: "read",
  tail: "read",
  stats: "read",
  query: "read",
  alerts: "read",
  delete: "admin",
};

/** OTLP's LogsService (opentelemetry.proto.collector.logs.v1), served beside the LogService. */
export type OtlpLogsHandlers = { export: UnaryHandler<ExportLogsServiceRequest, ExportLogsServiceResponse> };

/** The access OTLP's Export needs: it writes, as Write does. */
export const otlpMethodAccess: Record<keyof OtlpLogsHandlers, Access> = { export: "write" };

/** The LogService, free of any transport: what a transport's edge serves. */
export interface LogServiceCore {
  handlers: LogServiceHandlers;
  /** The OTLP logs receiver, on the same store, tokens and limits. */
  otlp: OtlpLogsHandlers;
  auth: Authorizer;
  limits: Limits;
  /** Ends every open Tail (server shutdown); open ones are counted for stats. */
  tails: { endAll(): void; open(): number };
  /**
   * Methods whose requests a transport may hand over as bytes: this turns
   * them into the message the handler takes (decoded off the main thread).
   */
  decoders: Partial<Record<MethodName, (bytes: Uint8Array) => Promise<unknown>>>;
}

export function createLogService(serviceDeps: ServiceDeps): LogServiceCore {
  // Text that is not UTF-8 is refused when a request decodes, on every transport.
  for (const method of LogService.methods) verifyUtf8(method.input);
  verifyUtf8(ExportLogsServiceRequestSchema);
  const deps: HandlerDeps = { ...serviceDeps, offsets: lazyOffsetCodec(serviceDeps.store) };
  const tails = createTailService(deps);
  return {
    handlers: {
      flush: createFlushHandler(deps),
      setStatus: createSetStatusHandler(deps),
      read: createReadHandler(deps),
      usage: createUsageHandler(deps),
      write: createWriteHandler(deps),
      listStatus: createListStatusHandler(deps),
      tail: tails.follow,
      ingest: createIngestHandler(deps),
      stats: createStatsHandler(deps),
      delete: createDeleteHandler(deps),
      query: createQueryHandler(deps),
      alerts: createAlertsHandler(deps),
    },
    otlp: { export: createOtlpExportHandler(deps, deps.otlp ?? defaultOtlpMapping) },
    auth: deps.auth,
    limits: deps.limits,
    tails: { endAll: tails.endAll, open: tails.open },
    decoders: deps.prepare ? { write: deps.prepare.write, ingest: deps.prepare.ingest } : {},
  };
}

export { LogService, LogsService };
