import { create, toJsonString } from "@bufbuild/protobuf";
import sparkly from "sparkly";
import {
  type LogUsageRecord,
  type LogUsageResponse,
  LogUsageRequestSchema,
  LogUsageResponseSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { callFailure, type ClientOptions, createLogServiceClient } from "../client/log-service-client.js";
import { parseTime } from "./read.js";

export interface UsageOptions extends ClientOptions {
  app: string;
  version: string[];
  since?: string;
  until?: string;
  resolution: number;
  combine: boolean;
  versionsOnly: boolean;
  output: "table" | "json";
}

const seconds = (usec: bigint) => Number(usec / 1_000_000n);

export function bucketTime(secondsSinceEpoch: number): string {
  return new Date(secondsSinceEpoch * 1000).toISOString().slice(0, 16).replace("T", " ");
}

/** The table (a row per bucket and version, then the total) and a sparkline of requests per version. */
export function formatUsage(response: LogUsageResponse, versionsOnly: boolean): string {
  if (versionsOnly) return response.usage.map((u) => u.versionId).join("\n");
  if (response.usage.length === 0) return "no usage recorded in that range";
  const cell = (n: bigint | number) => n.toLocaleString("en-US");
  const rows = response.usage.map((u) => [bucketTime(u.startTime), u.versionId || "(all)", cell(u.count), cell(u.totalSize), cell(u.records)]);
  const s = response.summary!;
  rows.push(["total", "", cell(s.count), cell(s.totalSize), cell(s.records)]);
  const head = ["bucket (UTC)", "version", "requests", "bytes", "lines"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  const table = [line(head), ...rows.map(line)];

  // Requests per bucket for each version, on one time axis (empty buckets are 0).
  const starts = [...new Set(response.usage.map((u) => u.startTime))].sort((a, b) => a - b);
  const byVersion = new Map<string, Map<number, LogUsageRecord>>();
  for (const u of response.usage) {
    const key = u.versionId || "(all)";
    if (!byVersion.has(key)) byVersion.set(key, new Map());
    byVersion.get(key)!.set(u.startTime, u);
  }
  const label = Math.max(...[...byVersion.keys()].map((k) => k.length));
  const chart = [...byVersion].map(([version, buckets]) => {
    const counts = starts.map((t) => Number(buckets.get(t)?.count ?? 0n));
    return `${version.padEnd(label)}  ${sparkly(counts, { minimum: 0 })}  max ${Math.max(...counts).toLocaleString("en-US")}/bucket`;
  });
  return [...table, "", `requests per bucket, ${bucketTime(starts[0]!)} to ${bucketTime(s.endTime)} UTC:`, ...chart].join("\n");
}

/** `reqlog usage`: storage statistics as a table and a terminal chart. */
export async function usageCommand(
  options: UsageOptions,
  print: (text: string) => void = (t) => process.stdout.write(`${t}\n`),
): Promise<void> {
  const client = createLogServiceClient(options);
  try {
    const now = Date.now();
    const request = create(LogUsageRequestSchema, {
      appId: options.app,
      versionId: options.version,
      ...(options.since ? { startTime: seconds(parseTime(options.since, "--since", now)) } : {}),
      ...(options.until ? { endTime: seconds(parseTime(options.until, "--until", now)) } : {}),
      resolutionHours: options.resolution,
      combineVersions: options.combine,
      versionsOnly: options.versionsOnly,
    });
    const response = await client.usage(request);
    print(options.output === "json" ? toJsonString(LogUsageResponseSchema, response) : formatUsage(response, options.versionsOnly));
  } catch (err) {
    throw new Error(callFailure(err));
  } finally {
    client.close();
  }
}
