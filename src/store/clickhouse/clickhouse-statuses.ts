import { create } from "@bufbuild/protobuf";
import { InstanceStatusSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import type { Clock } from "../../clock.js";
import type { StatusStore } from "../store.js";
import type { ChangeClock } from "./servers/change-clock.js";
import type { SqlClient } from "./sql-client.js";
import { guarded } from "./storage-error.js";
import { sqlString } from "./rows/sql-literal.js";

interface StatusRow {
  app_id: string;
  module_id: string;
  version_id: string;
  instance_id: string;
  status: string;
  time: string;
}

/**
 * SetStatus's latest text per instance: each SetStatus inserts a version
 * (the server's next change number, which follows time across servers:
 * the latest SetStatus wins, whichever server took it), read with FINAL.
 */
export function createClickHouseStatuses(sql: SqlClient, clock: ChangeClock, now: Clock): StatusStore {
  return {
    setStatus(instance, status, signal) {
      return guarded(signal, () =>
        sql.insert("statuses", [
          {
            app_id: instance.appId,
            module_id: instance.moduleId,
            version_id: instance.versionId,
            instance_id: instance.instanceId,
            status,
            time: String(now()),
            seq: String(clock.next()),
          },
        ]),
      );
    },
    listStatus(filter, signal) {
      return guarded(signal, async () => {
        const where = [`app_id = ${sqlString(filter.appId)}`];
        if (filter.moduleId !== undefined) where.push(`module_id = ${sqlString(filter.moduleId)}`);
        if (filter.versionId !== undefined) where.push(`version_id = ${sqlString(filter.versionId)}`);
        const rows = await sql.rows<StatusRow>(
          `SELECT app_id, module_id, version_id, instance_id, status, time FROM statuses FINAL
           WHERE ${where.join(" AND ")} ORDER BY module_id, version_id, instance_id`,
          signal,
        );
        return rows.map((r) =>
          create(InstanceStatusSchema, {
            appId: r.app_id,
            moduleId: r.module_id,
            versionId: r.version_id,
            instanceId: r.instance_id,
            status: r.status,
            time: BigInt(r.time),
          }),
        );
      });
    },
  };
}
