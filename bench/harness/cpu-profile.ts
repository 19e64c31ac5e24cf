/**
 * A V8 CPU profile (`node --cpu-prof`'s .cpuprofile) summed for a bench's
 * report: self time by file and by function, time under each function (its
 * own and its callees', each sample counted once per function however deep
 * it recurses), and the shares of idle time and garbage collection.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export function readCpuProfile(path: string): CpuProfile {
  return JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
}

/** A profile's time by file and function (µs), as summarizeProfile prints it. */
export interface ProfileSums {
  /** Every sample's time. */
  total: number;
  /** Time when the thread had nothing to run. */
  idle: number;
  garbage: number;
  selfByFile: Map<string, number>;
  selfByFunction: Map<string, number>;
  underFunction: Map<string, number>;
}

const fileOf = (url: string) => url.replace(/^.*\/(dist|node_modules)\//, "$1/") || "(native)";

/** Sums a profile's samples, leaving out those of its first `skipMs` (a server's start, when only its work is wanted). */
export function sumProfile(profile: CpuProfile, skipMs = 0): ProfileSums {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<number, number>();
  let elapsed = 0;
  profile.samples.forEach((id, i) => {
    const us = Math.max(0, profile.timeDeltas[i] ?? 0);
    elapsed += us;
    if (elapsed >= skipMs * 1000) self.set(id, (self.get(id) ?? 0) + us);
  });
  const sums: ProfileSums = {
    total: 0, idle: 0, garbage: 0, selfByFile: new Map(), selfByFunction: new Map(), underFunction: new Map(),
  };
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  const nameOf = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    return `${functionName || "(anonymous)"} ${fileOf(url)}:${lineNumber + 1}`;
  };
  for (const [id, us] of self) {
    const node = byId.get(id)!;
    sums.total += us;
    if (node.callFrame.functionName === "(idle)") sums.idle += us;
    if (node.callFrame.functionName === "(garbage collector)") sums.garbage += us;
    const file = fileOf(node.callFrame.url);
    add(sums.selfByFile, file.startsWith("node_modules/") ? file.split("/").slice(0, 3).join("/") : file, us);
    add(sums.selfByFunction, nameOf(node), us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = nameOf(byId.get(at)!);
      if (seen.has(name)) continue;
      seen.add(name);
      add(sums.underFunction, name, us);
    }
  }
  return sums;
}

/**
 * The summary as text: shares of the whole run and, with `records`, µs of
 * the thread per record (what a record costs each line of the profile);
 * the first `skipMs` of the profile left out.
 */
export function summarizeProfile(profile: CpuProfile, records?: number, lines = 25, skipMs = 0): string {
  const sums = sumProfile(profile, skipMs);
  const busy = sums.total - sums.idle;
  const cell = (us: number) =>
    `${((100 * us) / sums.total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms` +
    (records ? `  ${(us / records).toFixed(2).padStart(6)} µs/record` : "");
  const top = (map: Map<string, number>, count: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, count).map(([name, us]) => `  ${cell(us)}  ${name}`).join("\n");
  return [
    `CPU profile of the main thread${skipMs > 0 ? ` after its first ${(skipMs / 1000).toFixed(1)} s` : ""}: ${(sums.total / 1e6).toFixed(1)} s sampled, busy ${(busy / 1e6).toFixed(1)} s` +
      (records ? ` (${(busy / records).toFixed(1)} µs a record over ${records.toLocaleString()} records)` : ""),
    `  idle ${cell(sums.idle)}\n  garbage collection ${cell(sums.garbage)}`,
    `by file (self time):\n${top(sums.selfByFile, 15)}`,
    `by function (self time):\n${top(sums.selfByFunction, lines)}`,
    `by function (time under it):\n${top(sums.underFunction, lines)}`,
  ].join("\n");
}
