import { create } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";

/**
 * Lets V8 lay out the RequestLogs decoded from later requests (fast
 * properties) instead of keeping each as a hash table. Nothing about a
 * message changes but its layout in memory.
 *
 * protobuf-es decodes each field by a keyed store (`message[name] =
 * value`), and V8 stops laying out an object that gains more than ~16
 * properties that way: a forge request's RequestLog has ~23, so every
 * decoded one was a hash table (dictionary mode), ~1.4 KB of the ~2.8 KB a
 * record holds while a Write waits for the writer (the young generation's
 * collections copied it, docs/benchmarks.md), and every field read a
 * lookup. V8 checks that limit only when a property is first added along a
 * path of hidden classes, and not for a property added by defineProperty:
 * once a throwaway message has been given the same fields in the same
 * order that way, every later decode of that field order follows the path
 * it made and stays laid out.
 *
 * So a few records of each batch are looked at (every `sampleEvery`th) and
 * each field order not seen before is given to a throwaway message, up to
 * `maxOrders` orders (each costs V8 a few hidden classes for good); a
 * record of an order not seen is decoded as before.
 */
const sampleEvery = 100;
const maxOrders = 64;
const orders = new Set<string>();

export function layOutLaterRequestLogs(logs: readonly RequestLog[]): void {
  for (let i = 0; i < logs.length && orders.size < maxOrders; i += sampleEvery) {
    const log = logs[i]!;
    const names = Object.keys(log);
    const order = names.join(",");
    if (orders.has(order)) continue;
    orders.add(order);
    const shape = create(RequestLogSchema);
    for (const name of names) {
      if (Object.hasOwn(shape, name)) continue;
      // Its own value, so that the layout expects the kind of value decoding stores there.
      const value: unknown = log[name as keyof RequestLog];
      Object.defineProperty(shape, name, { value, writable: true, enumerable: true, configurable: true });
    }
  }
}
