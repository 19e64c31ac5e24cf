import type { QueryColumn, QueryResponse, QuerySummary, QueryValue } from "../../gen/reqlog/v1/log_service_pb.js";

/** A value of a Query's answer as JavaScript has it: text, a number (64-bit integers as numbers: µs are exact below 2^53), or null (empty). */
export type AnswerValue = string | number | null;

export interface QueryAnswer {
  columns: { name: string; type: string }[];
  rows: AnswerValue[][];
  summary?: QuerySummary;
}

export function answerValue(v: QueryValue): AnswerValue {
  switch (v.kind.case) {
    case "text":
      return v.kind.value;
    case "int":
      return Number(v.kind.value);
    case "float":
      return v.kind.value;
    default:
      return null;
  }
}

/** Reads a Query's stream whole: the columns (first message), the rows in order, the summary (last message). */
export async function readQueryAnswer(stream: AsyncIterable<QueryResponse>): Promise<QueryAnswer> {
  let columns: QueryColumn[] = [];
  const rows: AnswerValue[][] = [];
  let summary: QuerySummary | undefined;
  for await (const message of stream) {
    if (message.column.length > 0) columns = message.column;
    for (const row of message.row) rows.push(row.value.map(answerValue));
    if (message.summary) summary = message.summary;
  }
  return { columns: columns.map((c) => ({ name: c.name, type: c.type })), rows, ...(summary ? { summary } : {}) };
}
