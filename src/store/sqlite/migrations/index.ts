import m001 from "./001-init.js";
import m002 from "./002-meta.js";
import m003 from "./003-tokens.js";
import m004 from "./004-stats.js";
import m005 from "./005-stats-levels.js";

/** The ordered migrations: applied by version, each once, in its own transaction. */
export const migrations: readonly { version: number; name: string; sql: string }[] = [
  { version: 1, name: "001-init", sql: m001 },
  { version: 2, name: "002-meta", sql: m002 },
  { version: 3, name: "003-tokens", sql: m003 },
  { version: 4, name: "004-stats", sql: m004 },
  { version: 5, name: "005-stats-levels", sql: m005 },
];
