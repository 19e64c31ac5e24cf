/**
 * A call's metadata (gRPC metadata, HTTP headers), whatever the transport:
 * the values of a key (lower case), strings for text keys and bytes for
 * `-bin` keys, as gRPC defines them. Here, below both the authorizer and the
 * service, so that each reads it without importing the other.
 */
export interface CallMetadata {
  get(key: string): (string | Uint8Array)[];
}
