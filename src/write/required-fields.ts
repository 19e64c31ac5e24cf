import type { DescMessage, Message } from "@bufbuild/protobuf";
import { isFieldSet } from "@bufbuild/protobuf";

const LEGACY_REQUIRED = 3;

/**
 * The proto2 `required` fields of a message (and of the messages inside it)
 * that are not set, as paths such as `log[2].line[0].time`. fromBinary does
 * not check required fields, so every request is walked here.
 * `allowMissing` names fields (by proto name, per message type) that the
 * caller derives instead.
 */
export function missingRequiredFields(
  schema: DescMessage,
  message: Message,
  allowMissing: ReadonlySet<string> = new Set(),
  prefix = "",
): string[] {
  const missing: string[] = [];
  const fields = schema.fields;
  for (const field of fields) {
    const path = prefix + field.name;
    const value = (message as unknown as Record<string, unknown>)[field.localName];
    if (field.fieldKind === "message") {
      if (isFieldSet(message, field)) {
        missing.push(...missingRequiredFields(field.message, value as Message, allowMissing, `${path}.`));
      } else if (field.presence === LEGACY_REQUIRED) {
        missing.push(path);
      }
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      (value as Message[]).forEach((item, i) => {
        missing.push(...missingRequiredFields(field.message, item, allowMissing, `${path}[${i}].`));
      });
    } else if (
      field.presence === LEGACY_REQUIRED &&
      !isFieldSet(message, field) &&
      !allowMissing.has(`${schema.typeName}.${field.name}`)
    ) {
      missing.push(path);
    }
  }
  return missing;
}
