import type Database from "better-sqlite3";
import m001 from "./001-init.js";
import m002 from "./002-meta.js";
import m003 from "./003-tokens.js";
import m004 from "./004-stats.js";
import m005 from "./005-stats-levels.js";
import { migrate006 } from "./006-search-and-diet.js";
import m007 from "./007-secure-delete.js";
import m008 from "./008-search-fast-delete.js";
import m009 from "./009-status-index.js";

/**
 * The ordered migrations: applied by version, each once, in its own
 * transaction. Most are SQL; one that must re-encode stored rows runs code
 * (`run`). (Version 5 belongs to the stats rollups' own change.)
 */
export const migrations: readonly { version: number; name: string; sql?: string; run?: (db: Database.Database) => void }[] = [
  { version: 1, name: "001-init", sql: m001 },
  { version: 2, name: "002-meta", sql: m002 },
  { version: 3, name: "003-tokens", sql: m003 },
  { version: 4, name: "004-stats", sql: m004 },
  { version: 5, name: "005-stats-levels", sql: m005 },
  { version: 6, name: "006-search-and-diet", run: migrate006 },
  { version: 7, name: "007-secure-delete", sql: m007 },
  { version: 8, name: "008-search-fast-delete", sql: m008 },
  { version: 9, name: "009-status-index", sql: m009 },
];
