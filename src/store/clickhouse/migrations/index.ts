import type { TableLayout } from "../table-layout.js";
import m001 from "./001-init.js";
import m002 from "./002-positions.js";
import m003 from "./003-group-rollups.js";
import m004 from "./004-servers.js";
import m005 from "./005-search.js";
import m006 from "./006-column-diet.js";
import m007 from "./007-coded-texts.js";

/**
 * The ordered migrations: applied by version, each once (migrate.ts). The
 * numbers may have gaps (branches may land out of order): a
 * migration runs when its number is not recorded, whatever came after it.
 */
export const migrations: readonly { version: number; name: string; statements: (layout: TableLayout) => readonly string[] }[] = [
  { version: 1, name: "001-init", statements: m001 },
  { version: 2, name: "002-positions", statements: m002 },
  { version: 3, name: "003-group-rollups", statements: m003 },
  { version: 4, name: "004-servers", statements: m004 },
  { version: 5, name: "005-search", statements: m005 },
  { version: 6, name: "006-column-diet", statements: m006 },
  { version: 7, name: "007-coded-texts", statements: m007 },
];
