import { pino, type Logger } from "pino";

/** Structured JSON logs on stderr, so stdout stays for command output. */
export function createLogger(level: string): Logger {
  return pino({ name: "reqlog", level }, pino.destination({ dest: 2, sync: true }));
}
