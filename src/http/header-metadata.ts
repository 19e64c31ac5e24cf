import { decodeBinaryHeader } from "@connectrpc/connect";
import type { CallMetadata } from "../domain/call-metadata.js";

/**
 * HTTP headers as call metadata: `-bin` headers are base64 (as gRPC and
 * Connect send them), several values of one header arrive joined by commas.
 */
export function headerMetadata(headers: Headers): CallMetadata {
  return {
    get(key) {
      const value = headers.get(key);
      if (value === null) return [];
      if (!key.endsWith("-bin")) return [value];
      return value.split(",").map((part) => decodeBinaryHeader(part.trim()));
    },
  };
}
