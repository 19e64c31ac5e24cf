import m001 from "./001-init.js";

/** The ordered migrations: applied by version, each once (migrate.ts). */
export const migrations: readonly { version: number; name: string; statements: readonly string[] }[] = [
  { version: 1, name: "001-init", statements: m001 },
];
