/**
 * What the helpers that run a real server of the system's (ClickHouse,
 * nginx) share: Debian's package installed when its binary is missing, a
 * free loopback port, and the server run as a plain child process that a
 * failing run cannot leave behind.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/**
 * A port free on 127.0.0.1 now, drawn at random from below the kernel's
 * ephemeral range. A port the kernel hands out (listen on 0) can be taken
 * again by any process's outgoing connection before the server that a config
 * names it for binds it (a CI run lost a ClickHouse cluster that way);
 * below the range only a listener can take it.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  const from = Math.max(1024, low - 12_288);
  for (let attempt = 0; attempt < 64; attempt++) {
    const port = from + Math.floor(Math.random() * (low - from));
    if (await canListen(port)) return port;
  }
  return listenOnce(0);
}

/**
 * Runs `start` (a server or servers on ports it picks with freePort); when a
 * port was taken before its server bound it, runs it again on other ports,
 * saying so (at most three times in all). Any other failure is thrown.
 */
export async function startOnFreePorts<T>(what: string, start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= 3 || !isPortClash(err)) throw err;
      console.log(`${what}: a port was taken before its server bound it; starting again on other ports (${attempt + 1}/3)`);
    }
  }
}

/** Whether a port is in use by another listener now: the clash a server's start reports. */
function isPortClash(err: unknown): boolean {
  return /address already in use|EADDRINUSE/i.test(String(err instanceof Error ? err.message : err));
}

/** The kernel's ephemeral port range (Linux's default when it cannot be read). */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (low! > 1024 && high! >= low!) return [low!, high!];
  } catch {
    // not Linux: the default below
  }
  return [32768, 60999];
}

function canListen(port: number): Promise<boolean> {
  return listenOnce(port).then(
    () => true,
    () => false,
  );
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/**
 * What `find` finds, installing Debian's `pkg` first when it finds nothing
 * (apt-get update, apt-get install; it says so, and needs root). RUNLEVEL=1
 * keeps a package's init script from starting a system service.
 */
export function withDebianPackage<T>(pkg: string, find: () => T | undefined): T {
  const found = find();
  if (found !== undefined) return found;
  console.log(`${pkg} is missing: installing Debian's ${pkg} package (apt-get update, apt-get install) …`);
  const install = spawnSync(
    "sh",
    ["-c", `apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${pkg}`],
    { stdio: "inherit" },
  );
  const after = find();
  if (install.status !== 0 || after === undefined) {
    throw new Error(`cannot install ${pkg}: apt-get exited with ${install.status ?? install.signal} (it needs root and a reachable Debian mirror)`);
  }
  return after;
}

/** A server running as a child process, its stderr kept. */
export interface LocalProcess {
  child: ChildProcess;
  stderr(): string;
  exited(): boolean;
  /** Stops it with `signal` (unless it has ended) and resolves once it has ended. */
  stop(signal: NodeJS.Signals): Promise<void>;
}

/** Starts `command`; it is killed when this process exits, so a run that fails does not leave it running. */
export function startLocalProcess(command: string, args: string[], cwd?: string): LocalProcess {
  const child = spawn(command, args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  let exited = false;
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void gone.then(() => (exited = true));
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  return {
    child,
    stderr: () => stderr,
    exited: () => exited,
    async stop(signal) {
      process.off("exit", killOnExit);
      if (!exited) {
        child.kill(signal);
        await gone;
      }
    },
  };
}
