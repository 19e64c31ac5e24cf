import { callFailure, type ClientOptions, createLogServiceClient } from "../client/log-service-client.js";
import { type AnswerValue, type QueryAnswer, readQueryAnswer } from "../client/query-answer.js";
import { queryErrorPosition } from "../query/logsql/query-error.js";
import { formatTime } from "../query/logsql/query-values.js";

export interface QueryOptions extends ClientOptions {
  app: string;
  json: boolean;
}

/** A value as the CLI prints it: `_time` (type time) as RFC 3339, numbers as they are (durations in µs), empty as "". */
function shown(value: AnswerValue, type: string): string | number | null {
  if (value === null) return null;
  if (type === "time" && typeof value === "number") return formatTime(value);
  return value;
}

/** The answer as a table: a header of the column names, then a row per line; numbers aligned right. */
export function formatAnswer(answer: QueryAnswer): string {
  const numeric = answer.columns.map((c) => ["int", "float", "duration"].includes(c.type));
  const cells = [
    answer.columns.map((c) => c.name),
    ...answer.rows.map((row) => row.map((v, i) => {
      const s = shown(v, answer.columns[i]!.type);
      return s === null ? "" : String(s);
    })),
  ];
  const widths = answer.columns.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells
    .map((r) => r.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd())
    .join("\n");
}

/** One JSON object per row, named by column (as `reqlog query --json` prints it). */
export function answerJsonLines(answer: QueryAnswer): string[] {
  return answer.rows.map((row) => JSON.stringify(Object.fromEntries(row.map((v, i) => [answer.columns[i]!.name, shown(v, answer.columns[i]!.type)]))));
}

/** An error message, with the query line it points at and a caret under the place when it names one. */
export function pointAt(message: string, query: string): string {
  const at = queryErrorPosition(message);
  if (!at) return message;
  const line = query.split("\n")[at.line - 1];
  if (line === undefined) return message;
  return `${message}\n  ${line}\n  ${" ".repeat(Math.max(0, at.column - 1))}^`;
}

/**
 * `reqlog query --app A 'QUERY'`: the answer as a table (or --json: a JSON
 * object per row) on stdout; when it is not whole, the reason on stderr.
 */
export async function queryCommand(
  query: string,
  options: QueryOptions,
  print: (text: string) => void = (t) => process.stdout.write(`${t}\n`),
  warn: (text: string) => void = (t) => process.stderr.write(`${t}\n`),
): Promise<void> {
  const client = createLogServiceClient(options);
  let answer: QueryAnswer;
  try {
    answer = await readQueryAnswer(client.query({ appId: options.app, query }));
  } catch (err) {
    throw new Error(pointAt(callFailure(err), query));
  } finally {
    client.close();
  }
  if (options.json) {
    for (const line of answerJsonLines(answer)) print(line);
  } else {
    print(formatAnswer(answer));
  }
  if (answer.summary?.partial) warn(answer.summary.partial);
}
