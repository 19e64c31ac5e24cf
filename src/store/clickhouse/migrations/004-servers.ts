/**
 * Migration 004-servers: what lets any number of reqlog servers share the
 * database (docs/architecture.md, "many servers, one database").
 *
 * - `servers`: each server's slot, heartbeat and mark (every change number
 *   of its slot up to the mark is stored), the latest row per slot by beat;
 *   on one shard, so one query reads every mark at one moment. Slot 0 holds
 *   the numbers of the one counter reqlog had before: all committed, up to
 *   the highest stored.
 * - `request_keys`: the key of every request an insert creates, by (slot,
 *   number), so a server reads what another created since it last looked
 *   (write/key-feed.ts). Its view runs after requests' (views run in the
 *   order of their names): a key read there is a request stored.
 * - `app_seqs`: the highest number per app and slot, so a page knows when no
 *   version of the app is past its snapshot. Its view runs first: a version
 *   readable anywhere is already counted there.
 *
 * Every statement may run again after a cut (IF NOT EXISTS; a second slot-0
 * row says the same).
 */
import type { TableLayout } from "../table-layout.js";
import { selectStoredAsWritten } from "../rows/request-row.js";
import { byRequest, createdDay } from "./001-init.js";

export default (t: TableLayout): string[] => [
  ...t.createTable("servers", `(
    slot UInt16,
    server String,                      -- the holder's id (random, per process)
    beat Int64,                         -- when the row was written (µs, the writer's wall clock)
    mark UInt64,                        -- every number of the slot up to this one is stored and visible
    closed UInt8                        -- 1: the slot is free (its server stopped, or went silent and was closed)
  ) ENGINE = ReplacingMergeTree(beat) ORDER BY slot`, "toUInt64(0)"),

  `INSERT INTO servers (slot, server, beat, mark, closed)
   SELECT toUInt16(0), 'before 004', toInt64(0),
     greatest((${selectStoredAsWritten("max(seq)", "")}), greatest((SELECT max(seq) FROM statuses), (SELECT max(seq) FROM seq_marks))), toUInt8(1)`,

  ...t.createTable("request_keys", `(
    slot UInt16,
    seq UInt64,
    app String,
    request_id String,
    created_at Int64
  ) ENGINE = MergeTree PARTITION BY ${createdDay} ORDER BY (slot, seq)`, byRequest),

  ...t.createView("request_changes_6_keys", "request_keys", (from) => `
    SELECT toUInt16(bitAnd(seq, 4095)) AS slot, seq, app, request_id, created_at FROM ${from("request_changes")} WHERE rkey = seq`),

  ...t.createTable("app_seqs", `(
    app String,
    slot UInt16,
    top UInt64                          -- (not seq: 18.16 takes no alias named after a column it is made from)
  ) ENGINE = ReplacingMergeTree(top) ORDER BY (app, slot)`, "rand()"),

  ...t.createView("request_changes_0_app_seqs", "app_seqs", (from) => `
    SELECT app, toUInt16(bitAnd(seq, 4095)) AS slot, max(seq) AS top FROM ${from("request_changes")} GROUP BY app, slot`),
];
