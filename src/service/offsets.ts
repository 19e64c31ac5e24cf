import { createOffsetCodec, type OffsetCodec } from "../query/offset-codec.js";
import type { Store } from "../store/store.js";

/**
 * The offset codec under the store's key, read on first use (the key lives
 * in the store, which a networked backend reaches asynchronously) and shared
 * by every call after it; a failed read is tried again by the next call.
 */
export function lazyOffsetCodec(store: Pick<Store, "offsetKey">): () => Promise<OffsetCodec> {
  let codec: Promise<OffsetCodec> | undefined;
  return () => {
    // Not one call's signal: the key outlives the call that first asks for it.
    codec ??= store.offsetKey(new AbortController().signal).then(createOffsetCodec, (err: unknown) => {
      codec = undefined;
      throw err;
    });
    return codec;
  };
}
