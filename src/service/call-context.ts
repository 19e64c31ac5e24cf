import type { Access, Authorizer, Principal } from "../auth/authorizer.js";
import type { CallMetadata } from "../domain/call-metadata.js";
import { ReqlogError } from "../reqlog-error.js";

/** What a handler sees of its call besides the request. */
export interface CallContext {
  /** Who is calling (authenticated at the transport's edge). */
  readonly principal: Principal;
  readonly metadata: CallMetadata;
  /** Aborted when the caller cancels, its deadline passes or the server stops the call. */
  readonly signal: AbortSignal;
  /** PERMISSION_DENIED unless the caller may call this method on every one of `apps`. */
  authorize(apps: Iterable<string>): void;
  /** The app a call names implicitly: that of a token limited to exactly one app. */
  readonly defaultApp: string | undefined;
  /**
   * A stream's handler calls this once it is in place (a Tail subscribed):
   * the transport sends the response headers then, so a client that has them
   * knows that what it writes next will be seen.
   */
  ready(): void;
}

/** One unary RPC: validate → convert → call the store → convert back. */
export type UnaryHandler<Req, Res> = (request: Req, context: CallContext) => Promise<Res>;
/** A server-streaming RPC: the replies, pulled one at a time by the transport (its flow control holds the stream back). */
export type ServerStreamHandler<Req, Res> = (request: Req, context: CallContext) => AsyncIterable<Res>;
/** A bidirectional RPC: requests in, replies out, both pulled as the peers go. */
export type BidiStreamHandler<Req, Res> = (requests: AsyncIterable<Req>, context: CallContext) => AsyncIterable<Res>;

/** A call being served: its context, and the check the edge makes before sending any reply. */
export interface OpenCall {
  context: CallContext;
  /** Throws unless the handler authorized the call (a handler that forgets is a bug, not an open door). */
  assertAuthorized(): void;
}

/**
 * The one place a call is authenticated and its context made, for every
 * transport: the bearer token is checked (UNAUTHENTICATED, or
 * RESOURCE_EXHAUSTED past the token's rate), and `authorize` checks the
 * method's access level for the apps the handler names.
 */
export async function openCall(
  auth: Authorizer,
  access: Access,
  metadata: CallMetadata,
  signal: AbortSignal,
  onReady: () => void = () => {},
): Promise<OpenCall> {
  const principal = await auth.authenticate(metadata);
  let authorized = false;
  return {
    context: {
      principal,
      metadata,
      signal,
      defaultApp: auth.defaultApp(principal),
      authorize(apps) {
        auth.authorize(principal, access, apps);
        authorized = true;
      },
      ready: onReady,
    },
    assertAuthorized() {
      if (!authorized) throw ReqlogError.from(new Error(`the handler of a ${access} call did not authorize it`));
    },
  };
}
