import type { Logger } from "pino";
import type { AlertSource, AlertStanding, AppAlert } from "../domain/app-alert.js";
import { ReqlogError } from "../reqlog-error.js";

export interface AlertmanagerOptions {
  /** Alertmanager's base URL (http://host:9093, with its path prefix if it has one); user:password@ is sent as basic auth. */
  url: string;
  /** How often the alerts are read in the background, so that periods are known while no one looks (ms). */
  pollIntervalMs: number;
  logger: Logger;
  /** An answer this old (ms) is read again before a call uses it (default 2 s). */
  freshMs?: number;
  /** How long a request to Alertmanager may take (ms, default 5 s). */
  timeoutMs?: number;
  /** Resolved periods kept, the oldest ended dropped first (default 10,000), and for how long (ms, default 31 days). */
  maxResolved?: number;
  resolvedForMs?: number;
  /** Milliseconds since the epoch. */
  now?: () => number;
}

export interface AlertmanagerAlerts extends AlertSource {
  /** Reads the alerts now (the background reads call this). */
  poll(): Promise<void>;
  /** Stops the background reads. */
  close(): void;
}

/** An alert as Alertmanager's v2 API returns it (GET /api/v2/alerts: gettableAlerts). */
interface GettableAlert {
  fingerprint: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  startsAt: string;
  status?: { state?: string };
  generatorURL?: string;
}

function isGettableAlert(a: unknown): a is GettableAlert {
  const x = a as GettableAlert;
  return typeof x === "object" && x !== null && typeof x.fingerprint === "string" && typeof x.labels === "object" && x.labels !== null && typeof x.startsAt === "string";
}

/** The URL without its credentials (for messages and logs), and the basic auth header they make. */
function splitCredentials(url: string): { base: string; authorization?: string } {
  const parsed = new URL(url);
  const user = decodeURIComponent(parsed.username);
  const password = decodeURIComponent(parsed.password);
  parsed.username = "";
  parsed.password = "";
  const base = parsed.toString().replace(/\/+$/, "");
  if (user === "" && password === "") return { base };
  return { base, authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` };
}

const standingOf = (state: string | undefined): AlertStanding => (state === "suppressed" ? "suppressed" : "firing");

/**
 * The alerts Alertmanager holds, read from its v2 API by reqlog (so the
 * dashboard stays on its own origin and its token rules), kept as periods:
 * Alertmanager's API lists only the alerts it holds now, so an alert that
 * stops being listed is taken as resolved at the first read that misses it.
 * Reads run every `pollIntervalMs` in the background and before a call
 * whose last read is older than `freshMs`. What was resolved is kept in
 * memory (bounded in count and age): a restarted server knows the alerts
 * firing, not those that fired and ended before it started.
 */
export function createAlertmanagerAlerts(options: AlertmanagerOptions): AlertmanagerAlerts {
  const { base, authorization } = splitCredentials(options.url);
  const now = options.now ?? Date.now;
  const freshMs = options.freshMs ?? 2000;
  const timeoutMs = options.timeoutMs ?? 5000;
  const maxResolved = options.maxResolved ?? 10_000;
  const resolvedForMs = options.resolvedForMs ?? 31 * 24 * 3600_000;
  /** By fingerprint and start: an alert that fires again after it resolved is a new period. */
  const active = new Map<string, AppAlert>();
  const resolved = new Map<string, AppAlert>();
  let readAt = -Infinity;
  let reading: Promise<void> | undefined;
  let failing = false;

  async function read(): Promise<void> {
    const response = await fetch(`${base}/api/v2/alerts`, {
      headers: { accept: "application/json", ...(authorization ? { authorization } : {}) },
      signal: AbortSignal.timeout(timeoutMs),
    }).catch((err: unknown) => {
      throw new Error(err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err));
    });
    if (!response.ok) throw new Error(`HTTP ${response.status} from ${base}/api/v2/alerts`);
    const body = (await response.json()) as unknown;
    if (!Array.isArray(body)) throw new Error(`${base}/api/v2/alerts did not answer a list of alerts`);
    const at = now();
    const seen = new Set<string>();
    for (const a of body.filter(isGettableAlert)) {
      const startsAt = Math.floor(Date.parse(a.startsAt) / 1000);
      const key = `${a.fingerprint}@${startsAt}`;
      seen.add(key);
      active.set(key, {
        fingerprint: a.fingerprint,
        labels: a.labels,
        annotations: a.annotations ?? {},
        state: standingOf(a.status?.state),
        startsAt,
        ...(a.generatorURL ? { generatorUrl: a.generatorURL } : {}),
      });
    }
    for (const [key, alert] of active) {
      if (seen.has(key)) continue;
      active.delete(key);
      resolved.set(key, { ...alert, state: "resolved", endedAt: Math.floor(at / 1000) });
    }
    for (const [key, alert] of resolved) {
      // Oldest ended first (Map keeps insertion order, and periods are added as they end).
      if (resolved.size <= maxResolved && alert.endedAt! * 1000 >= at - resolvedForMs) break;
      resolved.delete(key);
    }
    readAt = at;
  }

  function poll(): Promise<void> {
    reading ??= read().finally(() => (reading = undefined));
    return reading;
  }

  const timer = setInterval(() => {
    poll().then(
      () => {
        if (failing) options.logger.info({ alertmanager: base }, "Alertmanager answers again");
        failing = false;
      },
      (err: unknown) => {
        if (!failing) options.logger.warn({ alertmanager: base, err: (err as Error).message }, "cannot read alerts from Alertmanager");
        failing = true;
      },
    );
  }, options.pollIntervalMs);
  timer.unref();

  return {
    poll,
    async alertsOf(app, from, to, signal) {
      if (now() - readAt > freshMs) {
        try {
          await poll();
        } catch (err) {
          throw ReqlogError.unavailable(`cannot read alerts from Alertmanager at ${base}: ${(err as Error).message}`, err);
        }
      }
      if (signal.aborted) throw ReqlogError.cancelled();
      const overlaps = (a: AppAlert) =>
        a.labels.app === app && (to === undefined || a.startsAt < to) && (from === undefined || (a.endedAt ?? Infinity) >= from);
      const current = [...active.values()].filter(overlaps).sort((a, b) => b.startsAt - a.startsAt);
      const ended = [...resolved.values()].filter(overlaps).sort((a, b) => b.endedAt! - a.endedAt!);
      return [...current, ...ended];
    },
    close() {
      clearInterval(timer);
    },
  };
}
