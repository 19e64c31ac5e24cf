#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { encodeLogGroup } from "./cli/encode-log-group.js";
import { type DeleteOptions, deleteCommand } from "./cli/delete.js";
import { type ReadOptions, readCommand } from "./cli/read.js";
import { serve } from "./cli/serve.js";
import { createTokenCommand, listTokensCommand, revokeTokenCommand } from "./cli/token.js";
import { type StatsOptions, statsCommand } from "./cli/stats.js";
import { type QueryOptions, queryCommand } from "./cli/query.js";
import { type ImportOptions, importCommand } from "./cli/import.js";
import { type ShipOptions, shipCommand } from "./cli/ship.js";
import { defaultOtlpMapping } from "./ingest/otlp-log-records.js";
import { type UsageOptions, usageCommand } from "./cli/usage.js";
import {
  parseAppList,
  parseCount,
  parsePositiveDuration,
  parseDuration,
  parseHttpListen,
  parseHttpUrl,
  parseListen,
  parsePositiveInt,
  serveDefaults,
} from "./config.js";
import { defaultConnectionLimits } from "./net/connection-guard.js";
import { defaultMaxLineBytes } from "./ingest/line-chunks.js";
import { loadLogMetrics } from "./metrics/log-metrics-file.js";
import { defaultMaxSeriesPerApp, defaultMetricsMaxAge } from "./metrics/metrics.js";
import { type LimitName, limitEnv, limitFlag, limitNames, limitSpecs, type Limits } from "./limits.js";
import { packageRoot } from "./package-root.js";
import type { StoreChoice } from "./cli/open-backend.js";
import { checkRedactParam, compileRedactPattern } from "./write/privacy.js";

/** Wraps a parser so commander reports its message as an invalid argument. */
function arg<T>(parse: (text: string, what: string) => T, what: string) {
  return (text: string): T => {
    try {
      return parse(text, what);
    } catch (err) {
      throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
    }
  };
}

/**
 * A serve flag with a value: its REQLOG_* variable, its default (shown as
 * `defaultText` when given) and a parser whose errors name the flag.
 */
function valueOption<T>(
  flags: string,
  description: string,
  env: string,
  parse: (text: string, what: string) => T,
  defaultValue: unknown,
  defaultText?: string,
): Option {
  const flag = flags.split(" ")[0]!;
  return new Option(flags, description).env(env).default(defaultValue, defaultText).argParser(arg(parse, flag));
}

// A reader that stops early (`reqlog read | head`) closes the pipe: stop quietly, as Unix tools do.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});

const version = (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string })
  .version;

const program = new Command("reqlog")
  .description("reqlog: a request-log service (App Engine's Log Service API over gRPC)")
  .version(version)
  // `reqlog --version` only before a command: after one, --version is the command's (read, usage, stats).
  .enablePositionalOptions();

/** The flags that choose a store (serve and the token commands share them), with their REQLOG_* variables. */
function storeOptions(command: Command): Command {
  return command
    .addOption(
      new Option("--store <kind>", "where requests are kept: the embedded SQLite file (--db) or ClickHouse")
        .choices(["sqlite", "clickhouse"])
        .env("REQLOG_STORE")
        .default(serveDefaults.store),
    )
    .addOption(new Option("--db <path>", "SQLite database file (created if missing)").env("REQLOG_DB").default(serveDefaults.db))
    .addOption(
      new Option("--clickhouse-url <url>", "ClickHouse's HTTP interface (--store clickhouse)")
        .env("REQLOG_CLICKHOUSE_URL")
        .default(serveDefaults.clickhouseUrl),
    )
    .addOption(
      new Option("--clickhouse-database <name>", "ClickHouse database, created and migrated on start")
        .env("REQLOG_CLICKHOUSE_DATABASE")
        .default(serveDefaults.clickhouseDatabase),
    )
    .addOption(new Option("--clickhouse-user <user>", "ClickHouse user").env("REQLOG_CLICKHOUSE_USER"))
    .addOption(
      new Option("--clickhouse-password <password>", "ClickHouse password (prefer the variable)").env("REQLOG_CLICKHOUSE_PASSWORD"),
    )
    .addOption(
      new Option(
        "--clickhouse-cluster <name>",
        "a cluster of the servers' remote_servers: tables ON CLUSTER on every shard, Distributed tables over them",
      ).env("REQLOG_CLICKHOUSE_CLUSTER"),
    );
}

/** The store a command's parsed flags choose. */
function storeChoice(opts: Record<string, unknown>): StoreChoice {
  return {
    store: opts.store as "sqlite" | "clickhouse",
    db: opts.db as string,
    clickhouse: {
      url: opts.clickhouseUrl as string,
      database: opts.clickhouseDatabase as string,
      user: opts.clickhouseUser as string | undefined,
      password: opts.clickhousePassword as string | undefined,
      cluster: opts.clickhouseCluster as string | undefined,
    },
  };
}

const serveCommand = program
  .command("serve")
  .description("serve the LogService gRPC API on a SQLite database")
  .addOption(
    valueOption("--listen <host:port>", "address to serve on (port 0 picks a free one)", "REQLOG_LISTEN", parseListen, serveDefaults.listen),
  )
  .addOption(
    valueOption(
      "--http-listen <host:port|off>",
      "HTTP port: the API over Connect/JSON, gRPC-Web and gRPC; the dashboard; /metrics",
      "REQLOG_HTTP_LISTEN",
      parseHttpListen,
      serveDefaults.httpListen,
    ),
  )
  .addOption(new Option("--no-metrics", "do not serve /metrics on the HTTP port").env("REQLOG_NO_METRICS"))
  .addOption(
    new Option("--no-request-metrics", "leave the apps' requests out of /metrics (reqlog's own metrics and --log-metrics stay)").env(
      "REQLOG_NO_REQUEST_METRICS",
    ),
  )
  .addOption(
    valueOption(
      "--metrics-max-series-per-app <n>",
      "series of one app per metric family with a route of their own; later routes count as http_route=\"other\"",
      "REQLOG_METRICS_MAX_SERIES_PER_APP",
      parsePositiveInt,
      defaultMaxSeriesPerApp,
    ),
  )
  .addOption(
    valueOption(
      "--metrics-max-age <duration>",
      "requests that ended (lines written) longer ago when stored are not counted in the request and log-based metrics (0: all are)",
      "REQLOG_METRICS_MAX_AGE",
      parseDuration,
      parseDuration(defaultMetricsMaxAge, "--metrics-max-age"),
      defaultMetricsMaxAge,
    ),
  )
  .addOption(
    valueOption(
      "--request-metrics-apps <apps>",
      "only these apps (comma-separated) get request metrics on /metrics (default: every app)",
      "REQLOG_REQUEST_METRICS_APPS",
      parseAppList,
      undefined,
    ),
  )
  .addOption(
    valueOption(
      "--request-metrics-skip-apps <apps>",
      "these apps (comma-separated) get no request metrics",
      "REQLOG_REQUEST_METRICS_SKIP_APPS",
      parseAppList,
      undefined,
    ),
  )
  .addOption(
    valueOption(
      "--log-metrics <file>",
      "counters of requests or app lines matching filters, on /metrics (JSON; docs/alerting.md); refused at start if invalid",
      "REQLOG_LOG_METRICS",
      (file: string) => file,
      undefined,
    ),
  )
  .addOption(
    valueOption(
      "--alertmanager-url <url>",
      "Alertmanager whose alerts for an app the dashboard shows (read by reqlog: same origin, same tokens)",
      "REQLOG_ALERTMANAGER_URL",
      parseHttpUrl,
      undefined,
    ),
  )
  .addOption(
    valueOption(
      "--alertmanager-poll-interval <duration>",
      "how often Alertmanager's alerts are read, to know when they fired and ended while no one looks",
      "REQLOG_ALERTMANAGER_POLL_INTERVAL",
      parseDuration,
      parseDuration(serveDefaults.alertmanagerPoll, "--alertmanager-poll-interval"),
      serveDefaults.alertmanagerPoll,
    ),
  )
  .addOption(
    new Option("--sync <mode>", "full: acknowledged writes survive power loss; normal: a process crash")
      .choices(["full", "normal"])
      .env("REQLOG_SYNC")
      .default(serveDefaults.sync),
  )
  .addOption(
    valueOption(
      "--shutdown-timeout <duration>",
      "how long in-flight calls may finish after SIGTERM",
      "REQLOG_SHUTDOWN_TIMEOUT",
      parseDuration,
      parseDuration(serveDefaults.shutdownTimeout, "--shutdown-timeout"),
      serveDefaults.shutdownTimeout,
    ),
  )
  .addOption(
    valueOption(
      "--retention <duration>",
      "delete requests older than this (e.g. 30d); 0 keeps everything",
      "REQLOG_RETENTION",
      parseDuration,
      0,
      serveDefaults.retention,
    ),
  )
  .addOption(
    valueOption(
      "--read-workers <n>",
      "threads that run Reads beside the writer (0: Reads run on the main thread)",
      "REQLOG_READ_WORKERS",
      parseCount,
      serveDefaults.readWorkers,
    ),
  )
  .addOption(
    valueOption(
      "--prepare-workers <n>",
      "threads that decode and validate large Writes and Ingest batches beside the writer (default 0: on the main thread)",
      "REQLOG_PREPARE_WORKERS",
      parseCount,
      serveDefaults.prepareWorkers,
    ),
  )
  .addOption(
    new Option("--log-level <level>", "log level")
      .choices(["trace", "debug", "info", "warn", "error", "fatal", "silent"])
      .env("REQLOG_LOG_LEVEL")
      .default(serveDefaults.logLevel),
  )
  .addOption(new Option("--tls-cert <file>", "TLS certificate chain (PEM)").env("REQLOG_TLS_CERT"))
  .addOption(new Option("--tls-key <file>", "TLS private key (PEM)").env("REQLOG_TLS_KEY"))
  .addOption(
    new Option("--tls-client-ca <file>", "require client certificates signed by this CA (PEM)").env("REQLOG_TLS_CLIENT_CA"),
  )
  .addOption(
    new Option(
      "--allow-remote-without-auth",
      "allow a non-loopback --listen address with no access tokens (logged as a warning)",
    ).env("REQLOG_ALLOW_REMOTE_WITHOUT_AUTH"),
  );
// Connections on both ports (src/net/connection-guard.ts).
serveCommand
  .addOption(
    valueOption(
      "--max-connections <n>",
      "connections each port holds at once; more are closed as they arrive",
      "REQLOG_MAX_CONNECTIONS",
      parsePositiveInt,
      defaultConnectionLimits.maxConnections,
    ),
  )
  .addOption(
    valueOption(
      "--header-timeout <duration>",
      "a new connection is closed unless it sends its first bytes (TLS: its handshake; HTTP/1.1: a request's headers) within this",
      "REQLOG_HEADER_TIMEOUT",
      parsePositiveDuration,
      defaultConnectionLimits.headerTimeoutMs,
      "10s",
    ),
  )
  .addOption(
    valueOption(
      "--idle-timeout <duration>",
      "a connection with no call in flight is closed after this",
      "REQLOG_IDLE_TIMEOUT",
      parsePositiveDuration,
      defaultConnectionLimits.idleTimeoutMs,
      "60s",
    ),
  )
  .addOption(
    valueOption(
      "--request-timeout <duration>",
      "a call's request (headers and body) must arrive whole within this (Ingest's stream excepted)",
      "REQLOG_REQUEST_TIMEOUT",
      parsePositiveDuration,
      defaultConnectionLimits.requestTimeoutMs,
      "60s",
    ),
  )
  .addOption(
    valueOption(
      "--max-streams-per-connection <n>",
      "calls one HTTP/2 connection may have open at once",
      "REQLOG_MAX_STREAMS_PER_CONNECTION",
      parsePositiveInt,
      defaultConnectionLimits.maxStreamsPerConnection,
    ),
  );
for (const name of limitNames) {
  serveCommand.addOption(
    valueOption(
      `--${limitFlag(name)} <n>`,
      `limit: ${limitSpecs[name].description}`,
      limitEnv(name),
      parsePositiveInt,
      limitSpecs[name].default,
    ),
  );
}
storeOptions(serveCommand);
serveCommand
  .addOption(new Option("--otlp-app-attribute <name>", "OTLP resource attribute naming the app").env("REQLOG_OTLP_APP_ATTRIBUTE").default(defaultOtlpMapping.appAttribute))
  .addOption(new Option("--otlp-version-attribute <name>", "OTLP resource attribute naming the version").env("REQLOG_OTLP_VERSION_ATTRIBUTE").default(defaultOtlpMapping.versionAttribute))
  .addOption(new Option("--otlp-module-attribute <name>", "OTLP resource attribute naming the module (default: none, module default)").env("REQLOG_OTLP_MODULE_ATTRIBUTE"))
  .addOption(new Option("--otlp-default-version <id>", "version of OTLP records whose resource names none").env("REQLOG_OTLP_DEFAULT_VERSION").default(defaultOtlpMapping.defaultVersion));
serveCommand
  .addOption(
    new Option("--redact-param <name>", "also redact this query parameter's value (repeatable; sig, token, password … are by default)")
      .argParser((name: string, previous: string[] = []) => [...previous, arg(checkRedactParam, "--redact-param")(name)])
      .default([]),
  )
  .addOption(
    new Option("--redact-pattern <re2>", "also redact what this RE2 pattern matches (its groups, if it has any) in resources and app lines (repeatable)")
      .argParser((source: string, previous: string[] = []) => {
        arg(compileRedactPattern, "--redact-pattern")(source);
        return [...previous, source];
      })
      .default([]),
  )
  .addOption(
    new Option("--no-default-redaction", "do not redact the built-in credentials (only --redact-param and --redact-pattern)").env(
      "REQLOG_NO_DEFAULT_REDACTION",
    ),
  )
  .addOption(
    new Option("--anonymize-ip", "store client IPs with the last IPv4 octet / last 80 IPv6 bits zeroed").env("REQLOG_ANONYMIZE_IP"),
  );
serveCommand.action(async (opts: Record<string, unknown>) => {
  const limits = Object.fromEntries(limitNames.map((n: LimitName) => [n, Number(opts[n])])) as Limits;
  await serve({
    ...storeChoice(opts),
    listen: opts.listen as string,
    httpListen: opts.httpListen === "off" ? undefined : (opts.httpListen as string),
    metrics: opts.metrics !== false,
    appMetrics: {
      requests: opts.requestMetrics !== false,
      maxSeriesPerApp: opts.metricsMaxSeriesPerApp as number,
      maxAgeMs: opts.metricsMaxAge as number,
      apps: opts.requestMetricsApps as string[] | undefined,
      skipApps: opts.requestMetricsSkipApps as string[] | undefined,
      logMetrics: opts.logMetrics === undefined ? undefined : loadLogMetrics(opts.logMetrics as string),
    },
    alertmanagerUrl: opts.alertmanagerUrl as string | undefined,
    alertmanagerPollMs: opts.alertmanagerPollInterval as number,
    sync: opts.sync as "full" | "normal",
    shutdownTimeoutMs: opts.shutdownTimeout as number,
    logLevel: opts.logLevel as string,
    readWorkers: opts.readWorkers as number,
    prepareWorkers: opts.prepareWorkers as number,
    retentionMs: opts.retention as number,
    allowRemoteWithoutAuth: Boolean(opts.allowRemoteWithoutAuth),
    tls: {
      cert: opts.tlsCert as string | undefined,
      key: opts.tlsKey as string | undefined,
      clientCa: opts.tlsClientCa as string | undefined,
    },
    limits,
    connections: {
      maxConnections: opts.maxConnections as number,
      headerTimeoutMs: opts.headerTimeout as number,
      idleTimeoutMs: opts.idleTimeout as number,
      requestTimeoutMs: opts.requestTimeout as number,
      maxStreamsPerConnection: opts.maxStreamsPerConnection as number,
    },
    privacy: {
      defaultRedaction: opts.defaultRedaction !== false,
      redactParams: opts.redactParam as string[],
      redactPatterns: opts.redactPattern as string[],
      anonymizeIp: Boolean(opts.anonymizeIp),
    },
    otlp: {
      appAttribute: opts.otlpAppAttribute as string,
      versionAttribute: opts.otlpVersionAttribute as string,
      moduleAttribute: opts.otlpModuleAttribute as string | undefined,
      defaultVersion: opts.otlpDefaultVersion as string,
    },
  });
});

const collect = (value: string, previous: string[]) => [...previous, value];
const serverOption = () =>
  new Option("--server <host:port>", "reqlog server").env("REQLOG_SERVER").default(serveDefaults.listen);
const tokenOption = () => new Option("--token <token>", "access token").env("REQLOG_TOKEN");
const tlsOption = () =>
  new Option("--tls [ca-file]", "connect with TLS (system roots, or this CA file)").env("REQLOG_TLS");

program
  .command("read")
  .description("print request logs, newest --limit oldest first, like `gcloud app logs read`; --follow for new ones")
  .addOption(serverOption())
  .addOption(tokenOption())
  .addOption(tlsOption())
  .requiredOption("--app <id>", "app id")
  .option("--module <id>", "module (default: all; with --version: default)")
  .option("--version <id>", "version (repeatable)", collect, [])
  .option("--since <when>", "only requests since: a duration back (15m, 2h, 7d) or a date/time")
  .option("--until <when>", "only requests before: a duration back or a date/time")
  .option("--severity <level>", "only requests with an app line at or above: debug|info|warning|error|critical or 0-4")
  .option("--include-incomplete", "include requests still in progress", false)
  .option("--regex <re2>", "RE2 pattern the combined line must contain a match of")
  .option("--host-regex <re2>", "RE2 pattern the host must contain a match of")
  .option("--request-id <id>", "only this request id (repeatable)", collect, [])
  .addOption(new Option("--limit <n>", "most requests to print").default(20).argParser(arg(parsePositiveInt, "--limit")))
  .addOption(new Option("--output <format>", "output format").choices(["combined", "json", "table"]).default("combined"))
  .option("--no-app-logs", "leave out app log lines")
  .option("--follow", "then print new matching requests as they are committed (Ctrl-C stops)", false)
  .action(async (opts: Omit<ReadOptions, "version" | "requestId"> & { version: string[]; requestId: string[] }) => {
    await readCommand(opts);
  });

/** A command that asks a server about one app's hourly rollups over a range (usage, stats). */
function rollupCommand(name: string, description: string): Command {
  return program
    .command(name)
    .description(description)
    .addOption(serverOption())
    .addOption(tokenOption())
    .addOption(tlsOption())
    .requiredOption("--app <id>", "app id")
    .option("--version <id>", "version (repeatable; default all)", collect, [])
    .option("--since <when>", "from: a duration back (15m, 2h, 7d) or a date/time (rounded down to the hour)")
    .option("--until <when>", "to: a duration back or a date/time (rounded up to the hour)");
}

rollupCommand("usage", "print storage usage per time bucket and version, with a chart of requests per bucket")
  .addOption(new Option("--resolution <hours>", "hours per bucket (0: one bucket)").default(1).argParser(arg(parseCount, "--resolution")))
  .option("--combine", "merge the versions", false)
  .option("--versions-only", "list only the versions", false)
  .addOption(new Option("--output <format>", "output format").choices(["table", "json"]).default("table"))
  .action(async (opts: UsageOptions) => {
    await usageCommand(opts);
  });

rollupCommand("stats", "print requests, errors, bytes and latency percentiles per route and status class, and top lists")
  .option("--module <id>", "module (default: all; with --version: default)")
  .addOption(new Option("--resolution <hours>", "hours per bucket (0: one bucket)").default(0).argParser(arg(parseCount, "--resolution")))
  .option("--per-version", "a row per version", false)
  .option("--status-class <class>", "only this status class: 1xx … 5xx, or other (repeatable)", collect, [])
  .addOption(new Option("--top <n>", "length of the top lists (0: none)").default(10).argParser(arg(parseCount, "--top")))
  .addOption(
    new Option("--split <by>", "a row per route and status class, per status class (routes merged), or per bucket (none)")
      .choices(["route", "class", "none"])
      .default("route"),
  )
  .option("--exclude-bots [re2]", "leave out requests whose user agent contains a match (no pattern: bot|crawl|spider|slurp)")
  .addOption(new Option("--output <format>", "output format").choices(["table", "json"]).default("table"))
  .action(async (opts: StatsOptions) => {
    await statsCommand(opts);
  });

program
  .command("query")
  .description("ask a question of an app's requests in LogsQL (docs/query.md): a table, or a JSON object per row")
  .addOption(serverOption())
  .addOption(tokenOption())
  .addOption(tlsOption())
  .requiredOption("--app <id>", "app id")
  .option("--json", "print one JSON object per row, named by column", false)
  .argument("<query>", "e.g. '_time:1h status:>=500 | stats by (route) count() as errors'")
  .action(async (query: string, opts: QueryOptions) => {
    await queryCommand(query, opts);
  });

program
  .command("delete")
  .description("erase an app's requests (and their app lines) matching every filter given; needs an admin token")
  .addOption(serverOption())
  .addOption(tokenOption())
  .addOption(tlsOption())
  .requiredOption("--app <id>", "app id")
  .option("--ip <address|cidr>", "only requests from this address or range, e.g. 203.0.113.9 or 10.0.0.0/8 (repeatable)", collect, [])
  .option("--regex <re2>", "only requests whose combined line contains a match")
  .option("--from <when>", "only requests since: a duration back (15m, 2h, 7d) or a date/time")
  .option("--to <when>", "only requests before: a duration back or a date/time")
  .option("--request-id <id>", "only this request id (repeatable)", collect, [])
  .option("--all", "with no other filter: every request of the app", false)
  .option("--dry-run", "count what would be deleted, delete nothing", false)
  .action(async (opts: DeleteOptions) => {
    await deleteCommand(opts);
  });

/** A command that reads access logs into an app (import, ship): where records go and how lines are read. */
function accessLogCommand(name: string, description: string, files: string): Command {
  return program
    .command(name)
    .description(description)
    .argument("<file...>", files)
    .addOption(serverOption())
    .addOption(tokenOption())
    .addOption(tlsOption())
    .requiredOption("--app <id>", "app the requests are stored under")
    .option("--module <id>", "module (default: default)")
    .option("--version <id>", "version", "access-log")
    .addOption(new Option("--format <name>", "line format (auto: combined or common)").choices(["auto", "combined", "common", "forge"]).default("auto"))
    .option("--log-format <format>", "an nginx log_format instead, e.g. '$remote_addr - $remote_user [$time_local] \"$request\" $status ...'")
    .option("--routes <file>", "route templates adding to (or replacing) the forge's, for url_map_entry")
    .option("--reject-file <file>", "append every line that does not parse to this file")
    .addOption(new Option("--batch <n>", "lines per Ingest batch").default(1000).argParser(arg(parsePositiveInt, "--batch")))
    .addOption(
      new Option("--max-line-length <bytes>", "longest line read; a longer one is rejected alone, with its file and line number")
        .default(defaultMaxLineBytes)
        .argParser(arg(parsePositiveInt, "--max-line-length")),
    );
}

accessLogCommand("import", "import access logs (nginx, Apache, the forge, or an nginx log_format) as request records", "access log files (plain or gzip; - for stdin)")
  .option("--json", "print only a JSON summary (no progress bar, rejected lines in the summary)", false)
  .option("--no-progress", "no progress bar on a terminal")
  .addOption(new Option("--retry-for <duration>", "keep retrying this long while the server is unreachable").default(30_000, "30s").argParser(arg(parseDuration, "--retry-for")))
  .action(async (files: string[], opts: ImportOptions) => {
    process.exitCode = await importCommand(files, opts);
  });

accessLogCommand("ship", "send access logs as they are written, through rotation, resuming where it stopped", "access log files to follow (the paths the server writes to)")
  .option("--follow", "keep following the files (else ship what is there and exit)", false)
  .option("--state <file>", "where positions are saved (default: reqlog-ship-<hash>.state.json here)")
  .addOption(new Option("--rotate-wait <duration>", "read a rotated file until it has not grown for this long").default(5000, "5s").argParser(arg(parseDuration, "--rotate-wait")))
  .addOption(new Option("--poll <duration>", "how often files are looked at when nothing is new").default(250, "250ms").argParser(arg(parseDuration, "--poll")))
  .action(async (files: string[], opts: ShipOptions) => {
    process.exitCode = await shipCommand(files, opts);
  });

const token = program.command("token").description("manage access tokens (kept as hashes in the database)");
storeOptions(token.command("create"))
  .description("create a token and print it (only this once)")
  .option("--scope <scope>", "read:logs, write:logs or admin (repeatable)", collect, [])
  .option("--app <id>", "limit the token to this app (repeatable; default every app)", collect, [])
  .option("--name <text>", "a name to recognise it by in `token list`")
  .action(async (opts: Record<string, unknown> & { scope: string[]; app: string[]; name?: string }) => {
    process.stdout.write(`${await createTokenCommand({ ...opts, ...storeChoice(opts) })}\n`);
  });
storeOptions(token.command("list"))
  .description("list tokens (never the tokens themselves)")
  .action(async (opts: Record<string, unknown>) => {
    process.stdout.write(`${await listTokensCommand(storeChoice(opts))}\n`);
  });
storeOptions(token.command("revoke"))
  .description("revoke a token by its id")
  .argument("<id>", "the token's id, from `token list`", arg(parsePositiveInt, "id"))
  .action(async (id: number, opts: Record<string, unknown>) => {
    process.stdout.write(`${await revokeTokenCommand(storeChoice(opts), id)}\n`);
  });

program
  .command("encode-log-group")
  .description("print the base64 of a UserAppLogGroup given as JSON, for FlushRequest.logs in grpcurl")
  .argument("<json>", 'e.g. \'{"logLine":[{"timestampUsec":"1795000000000000","level":"1","message":"hi"}]}\'')
  .action((json: string) => {
    process.stdout.write(`${encodeLogGroup(json)}\n`);
  });

program.parseAsync().catch((err: unknown) => {
  process.stderr.write(`reqlog: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
});
