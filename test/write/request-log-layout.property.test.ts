import { create, fromBinary, isFieldSet, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RequestLogSchema, WriteRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { layOutLaterRequestLogs } from "../../src/write/request-log-layout.js";
import { requestLogInit as fields } from "../helpers/record-arbitrary.js";

describe("request log layout", () => {
  it("changes nothing in a decoded request: the same fields set, the same values, the same bytes", () => {
    fc.assert(
      fc.property(fc.array(fields, { minLength: 1, maxLength: 3 }), (inits) => {
        const bytes = toBinary(WriteRequestSchema, create(WriteRequestSchema, { log: inits.map((init) => create(RequestLogSchema, init)) }));
        const first = fromBinary(WriteRequestSchema, bytes);
        const keysBefore = first.log.map((log) => Object.keys(log));
        layOutLaterRequestLogs(first.log);
        // The messages looked at are left as they were.
        expect(first.log.map((log) => Object.keys(log))).toEqual(keysBefore);
        expect(toBinary(WriteRequestSchema, first)).toEqual(bytes);
        // Decoded along the field orders laid out: the same message.
        const again = fromBinary(WriteRequestSchema, bytes);
        for (const [i, log] of again.log.entries()) {
          expect(Object.keys(log)).toEqual(keysBefore[i]);
          for (const field of RequestLogSchema.fields) {
            expect(isFieldSet(log, field)).toBe(isFieldSet(first.log[i]!, field));
            expect(log[field.localName as keyof typeof log]).toEqual(first.log[i]![field.localName as keyof typeof log]);
          }
        }
        expect(toBinary(WriteRequestSchema, again)).toEqual(bytes);
        // The fields given to a throwaway message went to it alone, not to what every message inherits.
        expect(Object.keys(create(RequestLogSchema))).toEqual(["$typeName", "line"]);
      }),
      { numRuns: 300 },
    );
  });
});
