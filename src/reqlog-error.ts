/**
 * Status codes, numbered as gRPC numbers them (Connect uses the same codes),
 * so that no layer below the transports needs a transport's own constants.
 */
export const Code = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type Code = (typeof Code)[keyof typeof Code];

/** The LogServiceError.ErrorCode names a failure carries as its ErrorInfo reason. */
export type LogErrorCode = "INVALID_REQUEST" | "STORAGE_ERROR";

/**
 * The one error type of reqlog: a status code, the LogServiceError code, and
 * a message meant for the caller. It becomes a wire status only at a
 * transport's edge (grpc/status-metadata.ts, and the HTTP transport's twin).
 */
export class ReqlogError extends Error {
  override readonly name = "ReqlogError";

  constructor(
    readonly code: Code,
    readonly reason: LogErrorCode,
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }

  /** When a retry may succeed (rate limits): sent as a google.rpc.RetryInfo. */
  readonly retryAfterMs: number | undefined;

  /** Bad input: the request cannot succeed as sent. */
  static invalid(message: string): ReqlogError {
    return new ReqlogError(Code.INVALID_ARGUMENT, "INVALID_REQUEST", message);
  }

  /** Over a named limit (size, rate, concurrency). */
  static exhausted(message: string, retryAfterMs?: number): ReqlogError {
    return new ReqlogError(Code.RESOURCE_EXHAUSTED, "INVALID_REQUEST", message, { retryAfterMs });
  }

  static unauthenticated(message: string): ReqlogError {
    return new ReqlogError(Code.UNAUTHENTICATED, "INVALID_REQUEST", message);
  }

  static permissionDenied(message: string): ReqlogError {
    return new ReqlogError(Code.PERMISSION_DENIED, "INVALID_REQUEST", message);
  }

  /** A storage failure that a retry can fix (busy, full, shutting down). */
  static unavailable(message: string, cause?: unknown): ReqlogError {
    return new ReqlogError(Code.UNAVAILABLE, "STORAGE_ERROR", message, { cause });
  }

  /** The caller cancelled the call, or its deadline passed, before it finished. */
  static cancelled(message = "the call was cancelled"): ReqlogError {
    return new ReqlogError(Code.CANCELLED, "STORAGE_ERROR", message);
  }

  /**
   * Normalises anything thrown into a ReqlogError. Unknown errors become
   * INTERNAL with a generic message; the cause is kept for the server log only.
   */
  static from(err: unknown): ReqlogError {
    if (err instanceof ReqlogError) return err;
    return new ReqlogError(Code.INTERNAL, "STORAGE_ERROR", "internal storage error", {
      cause: err,
    });
  }
}
