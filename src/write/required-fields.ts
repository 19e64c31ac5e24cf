import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import { ReqlogError } from "../reqlog-error.js";

const LEGACY_REQUIRED = 3;

interface Shape {
  /** Required fields that are not messages. */
  required: DescField[];
  /** Their names as `allowMissing` names them (`type.field`), made once. */
  qualified: string[];
  /** Message and repeated-message fields, walked into. */
  nested: DescField[];
}

const shapes = new WeakMap<DescMessage, Shape>();

function shapeOf(schema: DescMessage): Shape {
  let shape = shapes.get(schema);
  if (!shape) {
    const required = schema.fields.filter((f) => f.presence === LEGACY_REQUIRED && f.fieldKind !== "message");
    shape = {
      required,
      qualified: required.map((f) => `${schema.typeName}.${f.name}`),
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
  // Nearly every message has them all: found so without making a path.
  if (complete(schema, message, allowMissing)) return [];
  const missing: string[] = [];
  const values = message as unknown as Record<string, unknown>;
  const { required, qualified, nested } = shapeOf(schema);
  for (let i = 0; i < required.length; i++) {
    const field = required[i]!;
    if (!Object.hasOwn(values, field.localName) && !allowMissing.has(qualified[i]!)) missing.push(prefix + field.name);
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

/** Whether missingRequiredFields finds none. */
function complete(schema: DescMessage, message: Message, allowMissing: ReadonlySet<string>): boolean {
  const values = message as unknown as Record<string, unknown>;
  const { required, qualified, nested } = shapeOf(schema);
  for (let i = 0; i < required.length; i++) {
    if (!Object.hasOwn(values, required[i]!.localName) && !allowMissing.has(qualified[i]!)) return false;
  }
  for (const field of nested) {
    const value = values[field.localName];
    if (field.fieldKind === "list") {
      for (const item of value as Message[]) if (!complete(field.message!, item, allowMissing)) return false;
    } else if (value !== undefined && Object.hasOwn(values, field.localName)) {
      if (!complete(field.message!, value as Message, allowMissing)) return false;
    } else if (field.presence === LEGACY_REQUIRED) {
      return false;
    }
  }
  return true;
}

/** The one message for required fields a request left unset (paths as missingRequiredFields gives them). */
export function requiredFieldsError(missing: readonly string[]): ReqlogError {
  return ReqlogError.invalid(`required field${missing.length > 1 ? "s" : ""} not set: ${missing.join(", ")}`);
}
