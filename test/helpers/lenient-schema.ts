import { clone, createFileRegistry, type DescFile, type DescMessage, type DescService } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FileDescriptorProtoSchema,
  file_google_protobuf_empty,
} from "@bufbuild/protobuf/wkt";
import { file_reqlog_v1_log_service } from "../../gen/reqlog/v1/log_service_pb.js";

/**
 * The reqlog schema with every `required` turned `optional`: the same wire
 * format, but toBinary lets a test send messages that miss required fields,
 * as a careless or hostile client could.
 */
function lenientFile(file: DescFile) {
  const proto = clone(FileDescriptorProtoSchema, file.proto);
  for (const message of proto.messageType) {
    for (const field of message.field) {
      if (field.label === FieldDescriptorProto_Label.REQUIRED) field.label = FieldDescriptorProto_Label.OPTIONAL;
    }
  }
  return createFileRegistry(proto, (name) =>
    name === file_google_protobuf_empty.proto.name ? file_google_protobuf_empty : undefined,
  );
}

const registry = lenientFile(file_reqlog_v1_log_service);

/** The lenient twin of a reqlog message schema (same type name). */
export function lenient(schema: DescMessage): DescMessage {
  return registry.getMessage(schema.typeName) ?? schema;
}

/** The lenient twin of a reqlog service: requests encode with the lenient message schemas. */
export function lenientService<S extends DescService>(service: S): S {
  return (registry.getService(service.typeName) ?? service) as S;
}
