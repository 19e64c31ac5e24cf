import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";

/** One app log line as the store keeps it; `pos` is its index in its flush. */
export interface AppLine {
  time: bigint;
  level: number;
  message: string;
  pos: number;
}

/** A validated request record, its required fields filled, ready for the store. */
export interface PreparedRecord {
  log: RequestLog;
  lines: AppLine[];
  /** `combined` as it must be stored: undefined when it equals the derived line. */
  storedCombined: string | undefined;
}

/** The request a Flush's (or an Ingest entry's) lines belong to. */
export interface RequestContext {
  appId: string;
  moduleId: string;
  /** False when the caller did not name a module ("default" is used). */
  moduleSet: boolean;
  versionId: string;
  requestId: Uint8Array;
}

/** App lines of one request, as a Flush or an Ingest entry carries them. */
export interface RequestLines {
  request: RequestContext;
  lines: readonly AppLine[];
}

/** The instance a SetStatus comes from, from the call metadata. */
export interface InstanceKey {
  appId: string;
  moduleId: string;
  versionId: string;
  instanceId: string;
}
