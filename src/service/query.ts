import { create, isFieldSet } from "@bufbuild/protobuf";
import {
  type QueryRequest,
  QueryRequestSchema,
  type QueryResponse,
  QueryResponseSchema,
  type QueryValue,
  QueryValueSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { systemClock } from "../clock.js";
import { limitFlag } from "../limits.js";
import { planQuery, type QueryPlan } from "../query/logsql/plan-query.js";
import type { FieldType } from "../query/logsql/query-fields.js";
import type { Value } from "../query/logsql/query-value.js";
import { ReqlogError } from "../reqlog-error.js";
import type { QueryResult } from "../store/store.js";
import type { ServerStreamHandler } from "./call-context.js";
import type { ServiceDeps } from "./service-deps.js";
import { answerFromRollups } from "./query-rollups.js";

/** Rows per message of the answer's stream. */
const rowsPerMessage = 500;

function wireValue(value: Value, type: FieldType): QueryValue {
  if (value === null) return create(QueryValueSchema);
  if (typeof value === "string") return create(QueryValueSchema, { kind: { case: "text", value } });
  if (type !== "float" && Number.isSafeInteger(value)) return create(QueryValueSchema, { kind: { case: "int", value: BigInt(value) } });
  return create(QueryValueSchema, { kind: { case: "float", value } });
}

/** What the answer says when it is not whole: the scan budget ended, or the rows were cut. */
function partialOf(plan: QueryPlan, answer: Pick<QueryResult, "scanned" | "total" | "cut">): string | undefined {
  if (answer.total !== undefined) {
    return (
      `partial: scanned ${answer.scanned} of ${answer.total} requests ` +
      `(${limitFlag("readScanRows")}=${plan.budget.rows}, ${limitFlag("readScanMs")}=${plan.budget.ms}): narrow _time for a whole answer`
    );
  }
  if (answer.cut) return `partial: the answer has more than ${plan.maxRows} rows (${limitFlag("maxQueryRows")}=${plan.maxRows}): add | limit N`;
  return undefined;
}

/**
 * Query: plans the query (docs/query.md), answers it from the Stats rollups
 * when the plan says they can and they hold the exact answer, else from the
 * store's rows, and streams the rows: the columns first, the summary last.
 */
export function createQueryHandler({ store, limits, clock = systemClock }: ServiceDeps): ServerStreamHandler<QueryRequest, QueryResponse> {
  return async function* query(request, call) {
    const f = QueryRequestSchema.field;
    if (!isFieldSet(request, f.appId)) throw ReqlogError.invalid("required field not set: app_id");
    if (!isFieldSet(request, f.query)) throw ReqlogError.invalid("required field not set: query");
    const plan = planQuery({ appId: request.appId, text: request.query }, limits, Number(clock()));
    call.authorize([plan.appId]);
    const fromRollups = plan.rollup ? await answerFromRollups(plan, store, limits, call.signal) : undefined;
    const answer: Omit<QueryResult, "source"> & { source: string } = fromRollups
      ? { ...fromRollups, source: "rollups" }
      : await store.query(plan, call.signal);
    const columns = plan.query.columns;
    const summary = {
      source: answer.source,
      ...(fromRollups && answer.scanned === 0 ? {} : { scanned: BigInt(answer.scanned) }),
      ...(answer.total !== undefined ? { total: BigInt(answer.total) } : {}),
      ...(partialOf(plan, answer) !== undefined ? { partial: partialOf(plan, answer) } : {}),
    };
    const rows = answer.rows;
    for (let i = 0; i === 0 || i < rows.length; i += rowsPerMessage) {
      const last = i + rowsPerMessage >= rows.length;
      yield create(QueryResponseSchema, {
        column: i === 0 ? columns.map((c) => ({ name: c.name, type: c.type, ...(c.group ? { group: true } : {}) })) : [],
        row: rows.slice(i, i + rowsPerMessage).map((r) => ({ value: r.map((v, k) => wireValue(v, columns[k]!.type)) })),
        ...(last ? { summary } : {}),
      });
    }
  };
}
