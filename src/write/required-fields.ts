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
  // Nearly every message has them all: found so by a walk that makes no path.
  if (walk(schema, message, allowMissing)) return [];
  const missing: string[] = [];
  walk(schema, message, allowMissing, missing, prefix);
  return missing;
}

/**
 * Walks a message for required fields that are not set, and returns
 * whether it found none. With `missing`, each one's path (after `prefix`)
 * is pushed there and the walk goes on; without, it stops at the first,
 * and no path is made.
 */
function walk(schema: DescMessage, message: Message, allowMissing: ReadonlySet<string>, missing?: string[], prefix = ""): boolean {
  const values = message as unknown as Record<string, unknown>;
  const { required, qualified, nested } = shapeOf(schema);
  let none = true;
  for (let i = 0; i < required.length; i++) {
    const field = required[i]!;
    if (Object.hasOwn(values, field.localName) || allowMissing.has(qualified[i]!)) continue;
    if (missing === undefined) return false;
    none = false;
    missing.push(prefix + field.name);
  }
  for (const field of nested) {
    const value = values[field.localName];
    if (field.fieldKind === "list") {
      const items = value as Message[];
      for (let i = 0; i < items.length; i++) {
        if (walk(field.message!, items[i]!, allowMissing, missing, missing && `${prefix}${field.name}[${i}].`)) continue;
        if (missing === undefined) return false;
        none = false;
      }
    } else if (value !== undefined && Object.hasOwn(values, field.localName)) {
      if (walk(field.message!, value as Message, allowMissing, missing, missing && `${prefix}${field.name}.`)) continue;
      if (missing === undefined) return false;
      none = false;
    } else if (field.presence === LEGACY_REQUIRED) {
      if (missing === undefined) return false;
      none = false;
      missing.push(prefix + field.name);
    }
  }
  return none;
}

/** The one message for required fields a request left unset (paths as missingRequiredFields gives them). */
export function requiredFieldsError(missing: readonly string[]): ReqlogError {
  return ReqlogError.invalid(`required field${missing.length > 1 ? "s" : ""} not set: ${missing.join(", ")}`);
}
