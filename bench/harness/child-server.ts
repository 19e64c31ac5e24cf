import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../../src/package-root.js";

/** How a child process ended: its exit code, or the signal that ended it. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ChildServer {
  process: ChildProcess;
  address: string;
  /** The HTTP port's address ("off" when turned off). */
  httpAddress: string;
  /** Everything the server wrote to stderr so far (JSON log lines). */
  stderr(): string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<ChildExit>;
  /** Sends SIGTERM (a graceful shutdown) and resolves as `exited` does. */
  stop(): Promise<ChildExit>;
  /** CPU time the process has used so far, all its threads, user and system (µs; Linux's /proc). */
  cpuMicros(): number;
}

/** Clock ticks a second of /proc/PID/stat's times (USER_HZ: 100 on Linux). */
const ticksPerSecond = 100;

/** CPU time a process has used so far, all its threads, user and system (µs), from /proc/PID/stat. */
export function processCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may hold spaces: count the fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  return (ticks * 1e6) / ticksPerSecond;
}

/**
 * Node's flags for every server a bench starts: with REQLOG_BENCH_CPU_PROF=DIR
 * each one writes a CPU profile into DIR when it stops (summed by
 * `node dist/bench/profile-summary.js DIR/*.cpuprofile`), whatever the bench;
 * REQLOG_BENCH_NODE_FLAGS adds flags of its own (space-separated, e.g.
 * `--max-semi-space-size=4`), to measure a server run with them.
 */
function benchNodeFlags(): string[] {
  const dir = process.env.REQLOG_BENCH_CPU_PROF;
  const extra = (process.env.REQLOG_BENCH_NODE_FLAGS ?? "").split(/\s+/).filter((flag) => flag !== "");
  return [...(dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : []), ...extra];
}

export const mainScript = join(packageRoot(), "dist", "src", "main.js");

/**
 * Runs the built `reqlog serve` in a child process (as a user would) and
 * resolves once it logs the address it serves on; `script` runs another
 * build (another checkout's dist/src/main.js); `nodeFlags` go to node itself
 * (e.g. --cpu-prof, which NODE_OPTIONS does not take).
 */
export function startChildServer(args: string[], env: Record<string, string> = {}, script = mainScript, nodeFlags: string[] = []): Promise<ChildServer> {
  const child = spawn(process.execPath, [...benchNodeFlags(), ...nodeFlags, script, "serve", ...args], {
    // The HTTP port on a free port unless the caller picks one: servers run side by side.
    env: { ...process.env, REQLOG_HTTP_LISTEN: "127.0.0.1:0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  const exited = new Promise<ChildExit>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const line = stderr.split("\n").find((l) => l.includes('"reqlog serving"'));
      if (!line) return;
      const stop = () => {
        child.kill("SIGTERM");
        return exited;
      };
      const announced = JSON.parse(line) as { address: string; http: string };
      resolve({
        process: child, address: announced.address, httpAddress: announced.http, stderr: () => stderr, exited, stop,
        cpuMicros: () => processCpuMicros(child.pid!),
      });
    });
    exited.then(({ code, signal }) =>
      reject(new Error(`reqlog serve exited (${code ?? signal}) before serving:\n${stderr}`)),
    );
  });
}

/** Runs the built `reqlog` CLI without blocking the event loop (an in-process server must answer it). */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [mainScript, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}
