import type { Authorizer } from "../auth/authorizer.js";
import type { Clock } from "../clock.js";
import type { AlertSource } from "../domain/app-alert.js";
import type { OtlpMapping } from "../ingest/otlp-log-records.js";
import type { Limits } from "../limits.js";
import type { OffsetCodec } from "../query/offset-codec.js";
import type { StatusStore, Store } from "../store/store.js";
import type { PreparePool } from "../write/prepare-pool.js";
import type { Privacy } from "../write/privacy.js";

/** What the handlers are built from. */
export interface ServiceDeps {
  store: Store;
  statuses: StatusStore;
  limits: Limits;
  /** Redaction and IP anonymisation, applied to every record and line written (privacy.ts). */
  privacy: Privacy;
  auth: Authorizer;
  /** Which resource attributes name the app, version and module of OTLP log records (service.name, service.version). */
  otlp?: OtlpMapping;
  /** Decodes and validates Write and Ingest requests off the main thread, when given (prepare-pool.ts). */
  prepare?: PreparePool;
  /**
   * The audit log: what a Delete did (who, the filter, how many; never the
   * deleted content), as the server's log at info.
   */
  audit: (message: string, fields: Record<string, unknown>) => void;
  /** Where the Alerts RPC reads an app's alerts (serve --alertmanager-url); without it Alerts is UNIMPLEMENTED. */
  alerts?: AlertSource;
  /** What relative query times (`_time:1h`) count back from; the system clock unless a test sets it. */
  clock?: Clock;
}

/** ServiceDeps with what the service derives from them once, for every handler. */
export interface HandlerDeps extends ServiceDeps {
  /** The offset codec under the store's key (read once, on first use). */
  offsets: () => Promise<OffsetCodec>;
}
