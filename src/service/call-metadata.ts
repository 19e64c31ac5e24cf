import type { InstanceKey, RequestContext } from "../domain/records.js";
import { ReqlogError } from "../reqlog-error.js";
import { checkIdentifier } from "../write/identifiers.js";
import type { CallMetadata } from "../domain/call-metadata.js";

/** Call metadata keys that name the request or instance a Flush or SetStatus belongs to. */
export const metadataKeys = {
  appId: "reqlog-app-id",
  moduleId: "reqlog-module-id",
  versionId: "reqlog-version-id",
  requestId: "reqlog-request-id",
  /** The same, as raw bytes (gRPC base64-encodes `-bin` values on the wire). */
  requestIdBin: "reqlog-request-id-bin",
  instanceId: "reqlog-instance-id",
} as const;

/** The one value of a key, or undefined; INVALID_ARGUMENT when it is given more than once. */
function single<T>(values: T[], key: string): T | undefined {
  if (values.length > 1) throw ReqlogError.invalid(`call metadata ${key} is given ${values.length} times`);
  return values[0];
}

function text(metadata: CallMetadata, key: string): string | undefined {
  const value = single(metadata.get(key), key);
  return value === undefined ? undefined : typeof value === "string" ? value : Buffer.from(value).toString("utf8");
}

function required(metadata: CallMetadata, key: string, rpc: string, fallback?: string): string {
  const value = text(metadata, key) ?? fallback;
  if (value === undefined) throw ReqlogError.invalid(`${rpc} needs call metadata ${key}`);
  checkIdentifier(value, `call metadata ${key}`);
  return value;
}

function moduleOf(metadata: CallMetadata): { moduleId: string; moduleSet: boolean } {
  const moduleId = text(metadata, metadataKeys.moduleId);
  if (moduleId === undefined) return { moduleId: "default", moduleSet: false };
  checkIdentifier(moduleId, `call metadata ${metadataKeys.moduleId}`);
  return { moduleId, moduleSet: true };
}

/**
 * The request a Flush belongs to: app (default: the token's, when it is
 * limited to one), module (default "default"), version and request id.
 */
export function requestContext(metadata: CallMetadata, defaultApp?: string): RequestContext {
  const appId = required(metadata, metadataKeys.appId, "Flush", defaultApp);
  const versionId = required(metadata, metadataKeys.versionId, "Flush");
  const asText = text(metadata, metadataKeys.requestId);
  const asBytes = single(metadata.get(metadataKeys.requestIdBin), metadataKeys.requestIdBin);
  if (asText !== undefined && asBytes !== undefined) {
    throw ReqlogError.invalid(
      `give the request id once: ${metadataKeys.requestId} or ${metadataKeys.requestIdBin}, not both`,
    );
  }
  const requestId =
    asText !== undefined ? new TextEncoder().encode(asText) : typeof asBytes === "string" ? undefined : asBytes;
  if (requestId === undefined) {
    throw ReqlogError.invalid(`Flush needs call metadata ${metadataKeys.requestId} (or ${metadataKeys.requestIdBin})`);
  }
  checkIdentifier(requestId, "the request id in call metadata");
  return { appId, versionId, requestId: new Uint8Array(requestId), ...moduleOf(metadata) };
}

/**
 * The instance a SetStatus comes from: app, module (default "default"),
 * version and instance id (default "": the version as a whole).
 */
export function instanceKey(metadata: CallMetadata, defaultApp?: string): InstanceKey {
  const appId = required(metadata, metadataKeys.appId, "SetStatus", defaultApp);
  const versionId = required(metadata, metadataKeys.versionId, "SetStatus");
  const instanceId = text(metadata, metadataKeys.instanceId);
  if (instanceId !== undefined) checkIdentifier(instanceId, `call metadata ${metadataKeys.instanceId}`);
  return { appId, versionId, instanceId: instanceId ?? "", moduleId: moduleOf(metadata).moduleId };
}
