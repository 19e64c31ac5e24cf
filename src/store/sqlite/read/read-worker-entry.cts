/**
 * The file the read pool's threads load. piscina loads a task file with
 * require() first, and Node 20's require() of an ES module can abort the
 * process when module loader hooks are registered (as test runners do:
 * "v8::Module::IsGraphAsync must be used on an instantiated module"). This
 * CommonJS entry loads the ES module worker with import() instead.
 */
import type { ReadTask, ReadTaskResult } from "./read-worker.js";

const worker = import("./read-worker.js");

async function read(task: ReadTask): Promise<ReadTaskResult> {
  return (await worker).default(task);
}

export = read;
