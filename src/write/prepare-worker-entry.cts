/**
 * The file the prepare pool's threads load (CommonJS, for the reason
 * read-worker-entry.cts gives): it loads the ES module worker with import().
 */
import type { PrepareResult, PrepareTask } from "./prepare-worker.js";

const worker = import("./prepare-worker.js");

async function prepare(task: PrepareTask): Promise<PrepareResult> {
  return (await worker).default(task);
}

export = prepare;
