import type { Metadata } from "@grpc/grpc-js";
import type { Authorizer } from "../auth/authorizer.js";
import type { Limits } from "../limits.js";
import type { Store } from "../store/store.js";

/** What a handler sees of its call besides the request. */
export interface CallInfo {
  metadata: Metadata;
}

/** One unary RPC: validate → convert → call the store → convert back. */
export type UnaryHandler<Req, Res> = (request: Req, call: CallInfo) => Promise<Res>;

/** What the handlers are built from. */
export interface ServiceDeps {
  store: Store;
  limits: Limits;
  auth: Authorizer;
}
