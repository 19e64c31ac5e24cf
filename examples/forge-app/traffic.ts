/**
 * Traffic for the example forge app: `npm run example:forge-traffic [-- EXTRA]`.
 * Exercises each behaviour once, then EXTRA (default 100) more requests;
 * exits 1 when an answer is not what the forge should answer.
 *
 *   FORGE_URL          the app (default http://127.0.0.1:3000)
 *   FORGE_SIGNING_KEY  the app's signing key, to make an expired URL (default: the development key)
 */
import { runForgeTraffic } from "./forge-traffic.js";
import { developmentSigningKey } from "./signing-key.js";

const base = process.env.FORGE_URL ?? "http://127.0.0.1:3000";
const extra = Number(process.argv[2] ?? 100);
const result = await runForgeTraffic(base, { signingKey: process.env.FORGE_SIGNING_KEY ?? developmentSigningKey, extra });
const statuses = [...result.statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status}: ${n}`).join(", ");
console.log(`sent ${result.sent} requests to ${base} (${statuses})`);
for (const wrong of result.wrong) console.log(`WRONG ${wrong}`);
process.exitCode = result.wrong.length > 0 ? 1 : 0;
