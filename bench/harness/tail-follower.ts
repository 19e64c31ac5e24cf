import { ConnectError } from "@connectrpc/connect";
import { createLogServiceClient } from "../../src/client/log-service-client.js";
import { Code } from "../../src/reqlog-error.js";

export interface TailFollower {
  /** Cancels the Tail and closes its connection. */
  stop(): Promise<void>;
}

/**
 * A Tail of `app` on `server`, on a connection of its own (as another
 * process's would be), calling `onRecord` with each record's request id and
 * the time (performance.now()) its page arrived. Resolves once the Tail is
 * in place (its headers came back).
 */
export async function followTail(server: string, app: string, onRecord: (id: string, at: number) => void): Promise<TailFollower> {
  const follower = createLogServiceClient({ server });
  const cancel = new AbortController();
  const decoder = new TextDecoder();
  let subscribed!: () => void;
  const inPlace = new Promise<void>((resolve) => (subscribed = resolve));
  const following = (async () => {
    try {
      for await (const page of follower.tail({ appId: app }, { signal: cancel.signal, onHeader: () => subscribed() })) {
        const now = performance.now();
        for (const log of page.log) onRecord(decoder.decode(log.requestId), now);
      }
    } catch (err) {
      if (ConnectError.from(err).code !== Code.CANCELLED) throw err; // the cancel of stop()
    }
  })();
  await Promise.race([inPlace, following]);
  return {
    async stop() {
      cancel.abort();
      await following;
      follower.close();
    },
  };
}
