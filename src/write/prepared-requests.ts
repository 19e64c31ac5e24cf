import type { PreparedIngest, PreparedWrite } from "./prepare-batches.js";

/**
 * Requests decoded and validated off the main thread (prepare-pool.ts)
 * reach their handler as a stand-in message of their type, with what the
 * worker made of them attached here; a handler that finds nothing attached
 * prepares the message itself (prepare-batches.ts), as on the HTTP edge.
 */
const attached = new WeakMap<object, PreparedWrite | PreparedIngest>();

export function attachPrepared<T extends object>(message: T, prepared: PreparedWrite | PreparedIngest): T {
  attached.set(message, prepared);
  return message;
}

export function preparedWriteOf(message: object): PreparedWrite | undefined {
  return attached.get(message) as PreparedWrite | undefined;
}

export function preparedIngestOf(message: object): PreparedIngest | undefined {
  return attached.get(message) as PreparedIngest | undefined;
}
