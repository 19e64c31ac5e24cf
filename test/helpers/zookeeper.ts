/**
 * A ZooKeeper of a test's own (what a ClickHouse cluster's ON CLUSTER DDL
 * needs): Debian's zookeeper, installed with apt-get when it is missing
 * (saying so), run as a plain Java process on loopback with a config and
 * data folder in a temporary directory, stopped after.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalProcess, withDebianPackage } from "./local-process.js";

export interface ZooKeeper {
  port: number;
  stop(): Promise<void>;
}

const javaDir = "/usr/share/java";
const zookeeperJar = join(javaDir, "zookeeper.jar");

/** Whether ZooKeeper answers "imok" to the four-letter "ruok" on its client port. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let reply = "";
    socket.on("connect", () => socket.write("ruok"));
    socket.on("data", (c) => (reply += c.toString()));
    socket.on("close", () => resolve(reply === "imok"));
    socket.on("error", () => resolve(false));
  });
}

/** Starts ZooKeeper on a loopback port; throws (with its output) when it cannot. */
export async function startZooKeeper(port: number): Promise<ZooKeeper> {
  withDebianPackage("zookeeper", () => (existsSync(zookeeperJar) && existsSync("/usr/bin/java") ? true : undefined));
  const dir = mkdtempSync(join(tmpdir(), "reqlog-zookeeper-"));
  mkdirSync(join(dir, "data"));
  writeFileSync(
    join(dir, "zoo.cfg"),
    [
      "tickTime=500",
      `dataDir=${dir}/data`,
      `clientPort=${port}`,
      "clientPortAddress=127.0.0.1",
      "admin.enableServer=false",
      "4lw.commands.whitelist=ruok",
      "",
    ].join("\n"),
  );
  // Its log4j configuration: warnings only, to the console.
  writeFileSync(join(dir, "log4j.properties"), "log4j.rootLogger=WARN, C\nlog4j.appender.C=org.apache.log4j.ConsoleAppender\nlog4j.appender.C.layout=org.apache.log4j.PatternLayout\n");
  const classpath = [...readdirSync(javaDir).filter((f) => f.endsWith(".jar")).map((f) => join(javaDir, f)), dir].join(":");
  const zookeeper = startLocalProcess(
    "java",
    ["-Xmx256m", "-cp", classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", join(dir, "zoo.cfg")],
    dir,
  );
  const stop = async () => {
    await zookeeper.stop("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  while (!(await answers(port))) {
    if (zookeeper.exited() || Date.now() > deadline) {
      await stop();
      const why = zookeeper.exited() ? "exited at start" : `did not answer on 127.0.0.1:${port} within 60 s`;
      throw new Error(`zookeeper ${why}\n${zookeeper.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, stop };
}
