import type Database from "better-sqlite3";
import { appKeySql, versionKeySql } from "./sql.js";

/** The key of an app, or undefined when it has stored nothing (read side: never inserts). */
export function createAppLookup(db: Database.Database): (appId: string) => number | undefined {
  const appKey = db.prepare(appKeySql).pluck();
  return (appId) => appKey.get(appId) as number | undefined;
}

/**
 * App and (module, version) keys for writes: looked up or inserted, and
 * cached. A key inserted by a write that is then rolled back must not
 * survive it: `forget` drops the caches whenever a write fails or a group
 * does not commit.
 */
export function createKeys(db: Database.Database): Keys {
  const appKeys = new Map<string, number>();
  /** By app key, module id, then version id: no name made a lookup. */
  const versionKeys = new Map<number, Map<string, Map<string, number>>>();
  const stmt = {
    appKey: db.prepare(appKeySql).pluck(),
    insertApp: db.prepare("INSERT INTO apps (app_id) VALUES (?)"),
    versionKey: db.prepare(versionKeySql).pluck(),
    insertVersion: db.prepare("INSERT INTO versions (app_key, module_id, version_id) VALUES (?, ?, ?)"),
  };

  return {
    app(appId: string): number {
      let key = appKeys.get(appId);
      if (key === undefined) {
        key = (stmt.appKey.get(appId) as number | undefined) ?? Number(stmt.insertApp.run(appId).lastInsertRowid);
        appKeys.set(appId, key);
      }
      return key;
    },
    version(app: number, moduleId: string, versionId: string): number {
      let modules = versionKeys.get(app);
      if (modules === undefined) versionKeys.set(app, (modules = new Map()));
      let versions = modules.get(moduleId);
      if (versions === undefined) modules.set(moduleId, (versions = new Map()));
      let key = versions.get(versionId);
      if (key === undefined) {
        key =
          (stmt.versionKey.get(app, moduleId, versionId) as number | undefined) ??
          Number(stmt.insertVersion.run(app, moduleId, versionId).lastInsertRowid);
        versions.set(versionId, key);
      }
      return key;
    },
    forget(): void {
      appKeys.clear();
      versionKeys.clear();
    },
  };
}

export interface Keys {
  app(appId: string): number;
  version(app: number, moduleId: string, versionId: string): number;
  forget(): void;
}
