/**
 * A bench's command line: its positional arguments, and the peers it was told
 * to run without (`--without clickhouse`, repeatable). A peer that fails to
 * start fails the bench unless it was named so: a comparison left out by
 * accident would print figures that look complete.
 */
export interface BenchArgs {
  positional: string[];
  without: ReadonlySet<string>;
}

export function benchArgs(argv: readonly string[] = process.argv.slice(2)): BenchArgs {
  const positional: string[] = [];
  const without = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--without") {
      const peer = argv[++i];
      if (peer === undefined) throw new Error("--without needs a peer's name, e.g. --without clickhouse");
      without.add(peer.toLowerCase());
    } else positional.push(argv[i]!);
  }
  return { positional, without };
}

/**
 * Starts a peer, or fails naming how to run without it; undefined only when
 * `--without NAME` was given (then it is not started at all).
 */
export async function requiredPeer<T>(args: BenchArgs, name: string, start: () => Promise<T | undefined>): Promise<T | undefined> {
  if (args.without.has(name)) {
    console.log(`without ${name} (--without ${name}): its comparisons are left out`);
    return undefined;
  }
  let failure: unknown;
  const peer = await start().catch((err: unknown) => {
    failure = err;
    return undefined;
  });
  if (peer === undefined) {
    const reason = failure instanceof Error ? failure.message : failure === undefined ? "it could not be had" : String(failure);
    throw new Error(`${name} did not start (${reason}): fix that, or run the bench with --without ${name}`);
  }
  return peer;
}
