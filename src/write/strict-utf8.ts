import type { DescField, DescMessage } from "@bufbuild/protobuf";

/**
 * proto2 leaves string fields unchecked, so protobuf-es decodes bytes that are
 * not UTF-8 as U+FFFD: stored text would differ from what was sent, silently.
 * This turns on protobuf-es's UTF-8 verification for every string field of
 * a message and the messages inside it, so such bytes fail to decode and the
 * request is refused. It must run before the first decode of the schema.
 */
export function verifyUtf8(schema: DescMessage, seen = new Set<string>()): void {
  if (seen.has(schema.typeName)) return;
  seen.add(schema.typeName);
  for (const field of schema.fields) {
    if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
      verifyUtf8(field.message, seen);
    } else if (field.fieldKind === "map" && field.mapKind === "message") {
      verifyUtf8(field.message, seen);
    }
    (field as { utf8Validation: boolean } & DescField).utf8Validation = true;
  }
}
