import { create } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import { InstanceStatusSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import type { Clock } from "../../clock.js";
import type { StatusStore } from "../store.js";
import { guarded } from "./storage-error.js";
import { noRequests, type WriteBatcher } from "./write/write-batcher.js";

type Row = Record<string, unknown>;

/** SetStatus's latest text per instance, in the statuses table; written through the group commit. */
export function createSqliteStatuses(db: Database.Database, batcher: WriteBatcher, now: Clock): StatusStore {
  const stmt = {
    setStatus: db.prepare(`
      INSERT INTO statuses (app_id, module_id, version_id, instance_id, status, time)
      VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (app_id, module_id, version_id, instance_id)
      DO UPDATE SET status = excluded.status, time = excluded.time`),
    listStatus: db
      .prepare(`
        SELECT app_id, module_id, version_id, instance_id, status, time FROM statuses
        WHERE app_id = @app AND (@module IS NULL OR module_id = @module)
          AND (@version IS NULL OR version_id = @version)
        ORDER BY module_id, version_id, instance_id`)
      .safeIntegers(true),
  };

  return {
    setStatus(instance, status, signal) {
      return guarded(signal, () =>
        batcher.run(() => {
          stmt.setStatus.run(instance.appId, instance.moduleId, instance.versionId, instance.instanceId, status, now());
        }, signal, { requests: noRequests }),
      );
    },
    listStatus(filter, signal) {
      return guarded(signal, () =>
        (
          stmt.listStatus.all({
            app: filter.appId,
            module: filter.moduleId ?? null,
            version: filter.versionId ?? null,
          }) as Row[]
        ).map((r) =>
          create(InstanceStatusSchema, {
            appId: r.app_id as string,
            moduleId: r.module_id as string,
            versionId: r.version_id as string,
            instanceId: r.instance_id as string,
            status: r.status as string,
            time: r.time as bigint,
          }),
        ),
      );
    },
  };
}
