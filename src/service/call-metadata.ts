import type { Metadata } from "@grpc/grpc-js";
import { ReqlogError } from "../reqlog-error.js";
import type { InstanceKey, RequestContext } from "../store/store.js";
import { checkIdentifier } from "../write/identifiers.js";

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

function text(metadata: Metadata, key: string): string | undefined {
  const values = metadata.get(key);
  if (values.length > 1) throw ReqlogError.invalid(`call metadata ${key} is given ${values.length} times`);
  const value = values[0];
  return value === undefined ? undefined : String(value);
}

function required(metadata: Metadata, key: string, rpc: string, fallback?: string): string {
  const value = text(metadata, key) ?? fallback;
  if (value === undefined) throw ReqlogError.invalid(`${rpc} needs call metadata ${key}`);
  checkIdentifier(value, `call metadata ${key}`);
  return value;
}

function moduleOf(metadata: Metadata): { moduleId: string; moduleSet: boolean } {
  const moduleId = text(metadata, metadataKeys.moduleId);
  if (moduleId === undefined) return { moduleId: "default", moduleSet: false };
  checkIdentifier(moduleId, `call metadata ${metadataKeys.moduleId}`);
  return { moduleId, moduleSet: true };
}

/**
 * The request a Flush belongs to: app (default: the token's, when it is
 * limited to one), module (default "default"), version and request id.
 */
export function requestContext(metadata: Metadata, defaultApp?: string): RequestContext {
  const appId = required(metadata, metadataKeys.appId, "Flush", defaultApp);
  const versionId = required(metadata, metadataKeys.versionId, "Flush");
  const asText = text(metadata, metadataKeys.requestId);
  const asBytes = metadata.get(metadataKeys.requestIdBin);
  if (asText !== undefined && asBytes.length > 0) {
    throw ReqlogError.invalid(
      `give the request id once: ${metadataKeys.requestId} or ${metadataKeys.requestIdBin}, not both`,
    );
  }
  if (asBytes.length > 1) throw ReqlogError.invalid(`call metadata ${metadataKeys.requestIdBin} is given ${asBytes.length} times`);
  const requestId = asText !== undefined ? new TextEncoder().encode(asText) : asBytes[0];
  if (requestId === undefined) {
    throw ReqlogError.invalid(`Flush needs call metadata ${metadataKeys.requestId} (or ${metadataKeys.requestIdBin})`);
  }
  checkIdentifier(requestId as Uint8Array, "the request id in call metadata");
  return { appId, versionId, requestId: new Uint8Array(requestId as Buffer), ...moduleOf(metadata) };
}

/**
 * The instance a SetStatus comes from: app, module (default "default"),
 * version and instance id (default "": the version as a whole).
 */
export function instanceKey(metadata: Metadata, defaultApp?: string): InstanceKey {
  const appId = required(metadata, metadataKeys.appId, "SetStatus", defaultApp);
  const versionId = required(metadata, metadataKeys.versionId, "SetStatus");
  const instanceId = text(metadata, metadataKeys.instanceId);
  if (instanceId !== undefined) checkIdentifier(instanceId, `call metadata ${metadataKeys.instanceId}`);
  return { appId, versionId, instanceId: instanceId ?? "", moduleId: moduleOf(metadata).moduleId };
}
