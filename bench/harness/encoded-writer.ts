import { type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { LogService, type WriteRequest, WriteRequestSchema, type WriteResponse } from "../../gen/reqlog/v1/log_service_pb.js";
import { clientDefinition } from "../../src/grpc/service-definition.js";

/**
 * A Write client that sends requests encoded ahead of time, so that a
 * benchmark times the server (receiving, storing, answering) and not the
 * client's encoding, as its peers' pre-serialized inserts are timed.
 */
export interface EncodedWriter {
  encode(request: WriteRequest): Uint8Array;
  write(encoded: Uint8Array): Promise<WriteResponse>;
  close(): void;
}

export function createEncodedWriter(address: string): EncodedWriter {
  const definition = clientDefinition(LogService, {
    encode: (schema: DescMessage, message: unknown) =>
      message instanceof Uint8Array ? message : toBinary(schema, message as MessageShape<DescMessage>),
    decode: (schema: DescMessage, bytes: Uint8Array) => fromBinary(schema, bytes),
  });
  const Client = grpc.makeGenericClientConstructor(definition, LogService.typeName);
  const client = new Client(address, grpc.credentials.createInsecure(), { "grpc.max_send_message_length": -1 }) as unknown as {
    write(request: Uint8Array, callback: (err: grpc.ServiceError | null, reply: WriteResponse) => void): void;
    close(): void;
  };
  return {
    encode: (request) => toBinary(WriteRequestSchema, request),
    write: (encoded) => new Promise((resolve, reject) => client.write(encoded, (err, reply) => (err ? reject(err) : resolve(reply)))),
    close: () => client.close(),
  };
}
