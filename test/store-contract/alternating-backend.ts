import type { Backend } from "../../src/store/store.js";

/** Methods that go to every server: observers of what each server commits. */
const broadcast = new Set(["observeWrites"]);

/** A backend's parts whose methods a call may go to either server. */
const parts = ["store", "statuses", "tokens", "maintenance"] as const;

/**
 * Several backends opened on one database, as several `reqlog serve`
 * processes would be, seen as one Backend whose calls alternate between
 * them: call n of any method goes to backend n mod count. So a record
 * written through one is read, paged, tailed, expired and counted through
 * another, and a Read's next page (its offset) goes to the other server;
 * a write observer listens on every server.
 * The backends are opened at once (the database's first start races them).
 */
export async function openAlternating(open: () => Promise<Backend>, count = 2): Promise<Backend> {
  const backends = await Promise.all(Array.from({ length: count }, open));
  let turn = 0;
  const next = () => backends[turn++ % count]!;
  const alternating = Object.fromEntries(
    parts.map((part) => [
      part,
      new Proxy(backends[0]![part], {
        get(_, method: string) {
          // Each server tells its own observers of the writes it commits (its metrics); all of
          // them together tell of every write, as the servers' metrics summed do.
          if (broadcast.has(method)) {
            return (...args: unknown[]) => {
              for (const b of backends) (b[part] as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!(...args);
            };
          }
          return (...args: unknown[]) => {
            const target = next()[part] as unknown as Record<string, (...a: unknown[]) => unknown>;
            return target[method]!(...args);
          };
        },
      }),
    ]),
  ) as Pick<Backend, (typeof parts)[number]>;
  return {
    ...alternating,
    async close() {
      await Promise.all(backends.map((b) => b.close()));
    },
  };
}
