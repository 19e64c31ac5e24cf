import { AsyncLocalStorage } from "node:async_hooks";
import { format } from "node:util";
import { microsecondsNow } from "../clock.js";
import type { CapturedLine } from "./record-encoder.js";

/** App log levels as the Log Service numbers them. */
export const Level = { DEBUG: 0, INFO: 1, WARNING: 2, ERROR: 3, CRITICAL: 4 } as const;
export type Level = (typeof Level)[keyof typeof Level];

/** The app log lines of the request being served, gathered until its record is sent. */
export interface RequestScope {
  readonly lines: CapturedLine[];
  /** Lines beyond `maxLines`, not kept. */
  droppedLines: number;
  readonly maxLines: number;
  /** Longest message in bytes; longer ones are cut (the service refuses lines over its max-line-bytes). */
  readonly maxLineBytes: number;
}

/** Where lines written outside any request go: a client's process request. */
export type ProcessSink = (level: Level, message: string, time: number) => void;

const scopes = new AsyncLocalStorage<RequestScope>();
const sinks: ProcessSink[] = [];
let droppedOutside = 0;

/** Runs `fn` (the rest of a request's handling) with `scope` as the current request's. */
export function runInScope<T>(scope: RequestScope, fn: () => T): T {
  return scopes.run(scope, fn);
}

/**
 * Lines written outside any request go to the sink added last that is
 * still there (the client made last and not closed); none: they are
 * dropped and counted (log.droppedOutsideRequest).
 */
export function addProcessSink(sink: ProcessSink): () => void {
  sinks.push(sink);
  return () => {
    const i = sinks.lastIndexOf(sink);
    if (i >= 0) sinks.splice(i, 1);
  };
}

/** Cuts a message to at most `maxBytes` bytes of UTF-8, saying how much was cut. */
export function clipMessage(message: string, maxBytes: number): string {
  // A character is at most 3 bytes of UTF-8 per UTF-16 unit: shorter strings cannot be over.
  if (message.length * 3 <= maxBytes) return message;
  const bytes = Buffer.from(message, "utf8");
  if (bytes.length <= maxBytes) return message;
  const note = ` …[cut ${bytes.length - maxBytes + 40} bytes]`;
  // toString drops a character split at the cut (it becomes U+FFFD, trimmed here).
  return bytes.subarray(0, maxBytes - 40).toString("utf8").replace(/\uFFFD$/, "") + note;
}

/** The arguments as console.log formats them; a logging call never throws into the app (a getter that throws). */
function formatted(args: unknown[]): string {
  try {
    return format(...args);
  } catch (err) {
    return `(log arguments that cannot be formatted: ${err instanceof Error ? err.message : String(err)})`;
  }
}

function write(given: Level, args: unknown[]): void {
  // A level outside 0..4 would get the whole record refused: it is clamped instead.
  const level = (given >= 0 ? (given <= 4 ? Math.trunc(given) : 4) : 0) as Level;
  const message = args.length === 1 && typeof args[0] === "string" ? args[0] : formatted(args);
  const scope = scopes.getStore();
  if (scope) {
    if (scope.lines.length >= scope.maxLines) {
      scope.droppedLines++;
      return;
    }
    scope.lines.push({ time: microsecondsNow(), level, message: clipMessage(message, scope.maxLineBytes) });
    return;
  }
  const sink = sinks.at(-1);
  if (sink) sink(level, message, microsecondsNow());
  else droppedOutside++;
}

/** The app logger: lines written while serving a request travel with that request's record. */
export interface AppLog {
  /** Writes a line at a level (0 DEBUG … 4 CRITICAL); arguments are formatted as console.log formats them. */
  write(level: Level, ...args: unknown[]): void;
  debug(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warning(...args: unknown[]): void;
  /** The same as warning. */
  warn(...args: unknown[]): void;
  /** An Error is written with its stack (and cause). */
  error(...args: unknown[]): void;
  critical(...args: unknown[]): void;
  /** Lines written outside any request while no client was open to take them. */
  readonly droppedOutsideRequest: number;
}

/**
 * `log.info("…")` anywhere in the code that serves a request (the
 * middleware puts the request in an AsyncLocalStorage, so this reaches it
 * across awaits and callbacks). Outside a request, lines go to the process
 * request of the last client opened (see createReqlogClient).
 */
export const log: AppLog = {
  write: (level, ...args) => write(level, args),
  debug: (...args) => write(Level.DEBUG, args),
  info: (...args) => write(Level.INFO, args),
  warning: (...args) => write(Level.WARNING, args),
  warn: (...args) => write(Level.WARNING, args),
  error: (...args) => write(Level.ERROR, args),
  critical: (...args) => write(Level.CRITICAL, args),
  get droppedOutsideRequest() {
    return droppedOutside;
  },
};
