import type { Server as NetServer } from "node:net";

/** Binds a listener to HOST:PORT (port 0 picks a free one); resolves with the port, or rejects naming the address. */
export function listenOn(listener: NetServer, listen: string, what: string): Promise<number> {
  const host = listen.slice(0, listen.lastIndexOf(":")).replace(/^\[|\]$/g, "");
  const port = Number(listen.slice(listen.lastIndexOf(":") + 1));
  return new Promise<number>((resolve, reject) => {
    const failed = (err: Error) => reject(new Error(`cannot listen on ${listen}${what}: ${err.message}`, { cause: err }));
    listener.once("error", failed);
    listener.listen(port, host, () => {
      listener.off("error", failed);
      resolve((listener.address() as { port: number }).port);
    });
  });
}
