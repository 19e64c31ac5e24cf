import { create, isFieldSet } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../../src/limits.js";
import { createCommittedWrites } from "../../src/store/committed-writes.js";
import { rowToLog } from "../../src/store/clickhouse/rows/request-row.js";
import { createRequestWriter } from "../../src/store/clickhouse/write/request-writer.js";
import { requestLogInit } from "../helpers/record-arbitrary.js";

// Every field a row keeps (lines and the offset are kept elsewhere).
const kept = RequestLogSchema.fields.filter((f) => f.name !== "line" && f.name !== "offset");

describe("ClickHouse request rows", () => {
  it("read back as the record written: the same fields set, with the same values, the others unset (property)", () => {
    const at = 1_795_000_000_000_000n;
    fc.assert(
      fc.property(requestLogInit, fc.boolean(), fc.boolean(), (init, derivedStart, derivedCombined) => {
        const log = create(RequestLogSchema, init);
        // Often the start time is the end time less the latency: the row leaves it out then.
        if (derivedStart) log.startTime = log.endTime - log.latency;
        let seq = 1n;
        const writer = createRequestWriter({ rows: new Map(), lines: new Map() }, () => seq++, createCommittedWrites(), defaultLimits);
        writer.writeRecord({ log, lines: [], storedCombined: derivedCombined ? undefined : log.combined }, at);
        const back = rowToLog(writer.changes[0]!.row);
        for (const field of kept) {
          const name = field.localName as keyof typeof log;
          expect({ field: field.name, set: isFieldSet(back, field) }).toEqual({ field: field.name, set: isFieldSet(log, field) });
          // The combined line is derived on read when the row leaves it out; it is the line the record's fields make.
          if (field.name !== "combined" || back.combined === log.combined) expect({ field: field.name, value: back[name] }).toEqual({ field: field.name, value: log[name] });
        }
      }),
      { numRuns: 500 },
    );
  });
});
