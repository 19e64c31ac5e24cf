import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { ReqlogError } from "../reqlog-error.js";

const LEGACY_REQUIRED = 3;

interface Shape {
  /** Required fields that are not messages. */
  required: DescField[];
  /** Message and repeated-message fields, walked into. */
  nested: DescField[];
}

const shapes = new WeakMap<DescMessage, Shape>();

function shapeOf(schema: DescMessage): Shape {
  let shape = shapes.get(schema);
  if (!shape) {
    shape = {
      required: schema.fields.filter((f) => f.presence === LEGACY_REQUIRED && f.fieldKind !== "message"),
      nested: schema.fields.filter(
        (f) => f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message"),
      ),
    };
    shapes.set(schema, shape);
  }
  return shape;
}

/**
 * The proto2 `required` fields of a message (and of the messages inside it)
 * that are not set, as paths such as `log[2].line[0].time` (the message's own
 * fields first, then those inside its messages). fromBinary does
 * not check required fields, so every request is walked here.
 * `allowMissing` names fields (as `type.field`) that the caller derives instead.
 *
 * A set field of a proto2 message is an own property of the object
 * (protobuf-es keeps defaults on the prototype), which is what is checked.
 */
export function missingRequiredFields(
  schema: DescMessage,
  message: Message,
  allowMissing: ReadonlySet<string> = new Set(),
  prefix = "",
): string[] {
  const missing: string[] = [];
  const values = message as unknown as Record<string, unknown>;
  const { required, nested } = shapeOf(schema);
  for (const field of required) {
    if (!Object.hasOwn(values, field.localName) && !allowMissing.has(`${schema.typeName}.${field.name}`)) {
      missing.push(prefix + field.name);
    }
  }
  for (const field of nested) {
    const value = values[field.localName];
    if (field.fieldKind === "list") {
      (value as Message[]).forEach((item, i) => {
        missing.push(...missingRequiredFields(field.message!, item, allowMissing, `${prefix}${field.name}[${i}].`));
      });
    } else if (value !== undefined && Object.hasOwn(values, field.localName)) {
      missing.push(...missingRequiredFields(field.message!, value as Message, allowMissing, `${prefix}${field.name}.`));
    } else if (field.presence === LEGACY_REQUIRED) {
      missing.push(prefix + field.name);
    }
  }
  return missing;
}

/** The one message for required fields a request left unset (paths as missingRequiredFields gives them). */
export function requiredFieldsError(missing: readonly string[]): ReqlogError {
  return ReqlogError.invalid(`required field${missing.length > 1 ? "s" : ""} not set: ${missing.join(", ")}`);
}
