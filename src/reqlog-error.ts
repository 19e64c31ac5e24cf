import { status as GrpcStatus } from "@grpc/grpc-js";

/** The LogServiceError.ErrorCode names a failure carries as its ErrorInfo reason. */
export type LogErrorCode = "INVALID_REQUEST" | "STORAGE_ERROR";

/**
 * The one error type of reqlog: a gRPC status code, the LogServiceError code,
 * and a message meant for the caller. It becomes a wire status only at the
 * transport edge (grpc/status-metadata.ts).
 */
export class ReqlogError extends Error {
  override readonly name = "ReqlogError";

  constructor(
    readonly code: GrpcStatus,
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
    return new ReqlogError(GrpcStatus.INVALID_ARGUMENT, "INVALID_REQUEST", message);
  }

  /** Over a named limit (size, rate, concurrency). */
  static exhausted(message: string, retryAfterMs?: number): ReqlogError {
    return new ReqlogError(GrpcStatus.RESOURCE_EXHAUSTED, "INVALID_REQUEST", message, { retryAfterMs });
  }

  static unauthenticated(message: string): ReqlogError {
    return new ReqlogError(GrpcStatus.UNAUTHENTICATED, "INVALID_REQUEST", message);
  }

  static permissionDenied(message: string): ReqlogError {
    return new ReqlogError(GrpcStatus.PERMISSION_DENIED, "INVALID_REQUEST", message);
  }

  /** A storage failure that a retry can fix (busy, full, shutting down). */
  static unavailable(message: string, cause?: unknown): ReqlogError {
    return new ReqlogError(GrpcStatus.UNAVAILABLE, "STORAGE_ERROR", message, { cause });
  }

  /**
   * Normalises anything thrown into a ReqlogError. Unknown errors become
   * INTERNAL with a generic message; the cause is kept for the server log only.
   */
  static from(err: unknown): ReqlogError {
    if (err instanceof ReqlogError) return err;
    return new ReqlogError(GrpcStatus.INTERNAL, "STORAGE_ERROR", "internal storage error", {
      cause: err,
    });
  }
}
