import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { LogService } from "../gen/reqlog/v1/log_service_pb.js";

export type Api = Client<typeof LogService>;

/**
 * The LogService over the Connect protocol (JSON, so calls read plainly in
 * the browser's network panel) on the page's own origin, with the token, when
 * there is one, as `Authorization: Bearer`.
 */
export function createApi(token: () => string): Api {
  const bearer: Interceptor = (next) => (request) => {
    const value = token();
    if (value !== "") request.header.set("authorization", `Bearer ${value}`);
    return next(request);
  };
  return createClient(LogService, createConnectTransport({ baseUrl: window.location.origin, interceptors: [bearer] }));
}

/** A failed call as the page shows it: the status name and the server's own message. */
export interface CallProblem {
  code: Code;
  /** "invalid_argument", as Connect writes codes. */
  codeName: string;
  message: string;
}

export function describeError(err: unknown): CallProblem {
  const e = ConnectError.from(err);
  const codeName = (Code[e.code] ?? "unknown").replace(/[A-Z]/g, (c, i: number) => (i === 0 ? "" : "_") + c.toLowerCase());
  return { code: e.code, codeName, message: e.rawMessage };
}

export function isCancel(err: unknown): boolean {
  return ConnectError.from(err).code === Code.Canceled;
}

export { Code };
