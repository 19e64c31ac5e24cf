import { readFileSync } from "node:fs";
import { ServerCredentials } from "@grpc/grpc-js";
import type { TlsFiles } from "../config.js";

function read(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read ${what} ${path}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Plaintext without TLS files; TLS with --tls-cert and --tls-key; and with
 * --tls-client-ca as well, clients must present a certificate from that CA.
 */
export function serverCredentials(tls: TlsFiles): ServerCredentials {
  if (tls.cert === undefined && tls.key === undefined) {
    if (tls.clientCa !== undefined) throw new Error("--tls-client-ca needs --tls-cert and --tls-key");
    return ServerCredentials.createInsecure();
  }
  if (tls.cert === undefined || tls.key === undefined) throw new Error("TLS needs both --tls-cert and --tls-key");
  const ca = tls.clientCa !== undefined ? read(tls.clientCa, "client CA") : null;
  return ServerCredentials.createSsl(
    ca,
    [{ cert_chain: read(tls.cert, "certificate"), private_key: read(tls.key, "private key") }],
    ca !== null,
  );
}
