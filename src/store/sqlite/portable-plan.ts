import RE2 from "re2";
import type { ReadPlan } from "../../query/read-plan.js";

/** A ReadPlan that can cross to a worker thread: patterns as their source text. */
export type PortablePlan = Omit<ReadPlan, "combinedRegex" | "hostRegex"> & {
  combinedRegex?: string;
  hostRegex?: string;
};

export function portablePlan(plan: ReadPlan): PortablePlan {
  return { ...plan, combinedRegex: plan.combinedRegex?.source, hostRegex: plan.hostRegex?.source };
}

const compiled = new Map<string, RE2>();

/** Patterns were validated when the plan was made; compiled ones are reused. */
function re2(source: string | undefined): RE2 | undefined {
  if (source === undefined) return undefined;
  let re = compiled.get(source);
  if (!re) {
    re = new RE2(source, "u");
    if (compiled.size > 1000) compiled.clear();
    compiled.set(source, re);
  }
  return re;
}

export function revivePlan(plan: PortablePlan): ReadPlan {
  return { ...plan, combinedRegex: re2(plan.combinedRegex), hostRegex: re2(plan.hostRegex) };
}
