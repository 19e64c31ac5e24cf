import { create } from "@bufbuild/protobuf";
import { type DeleteRequest, type DeleteResponse, DeleteResponseSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import type { Principal } from "../auth/authorizer.js";
import { type DeletePlan, planDelete } from "../query/delete-plan.js";
import type { UnaryHandler } from "./call-context.js";
import type { ServiceDeps } from "./service-deps.js";

/** Who called, as the audit log names them: a token's id and name (never the token), or "open" (no tokens). */
const who = (principal: Principal) =>
  principal.kind === "token" ? { tokenId: principal.token.id, tokenName: principal.token.name } : { token: "none (open server)" };

/**
 * The filter as the audit log shows it: the ids' count, not the ids (they
 * are the deleted requests' own); the addresses, times and pattern as given.
 */
function filterOf(request: DeleteRequest, plan: DeletePlan) {
  return {
    app: plan.appId,
    requestIds: plan.requestIds?.length,
    ip: request.ip.length > 0 ? request.ip : undefined,
    startTime: plan.startTime?.toString(),
    endTime: plan.endTime?.toString(),
    combinedLogRegex: plan.combinedRegex,
    all: request.all || undefined,
    dryRun: plan.dryRun || undefined,
  };
}

/**
 * Delete: erases an app's requests matching the filters, with their lines
 * (admin scope). Every Delete is logged, who and what filter and how many,
 * without any deleted content; one that stops early (cancelled, failed)
 * says how many went before it stopped.
 */
export function createDeleteHandler({ store, limits, audit }: ServiceDeps): UnaryHandler<DeleteRequest, DeleteResponse> {
  return async (request, call) => {
    const plan = planDelete(request, limits);
    call.authorize([plan.appId]);
    const entry = { ...who(call.principal), ...filterOf(request, plan) };
    let deleted = 0;
    try {
      deleted = await store.delete(plan, call.signal, (count) => (deleted += count));
    } catch (err) {
      audit(plan.dryRun ? "delete dry run stopped" : "delete stopped", { ...entry, deleted, error: err instanceof Error ? err.message : String(err) });
      throw err;
    }
    audit(plan.dryRun ? "delete dry run" : "delete", { ...entry, deleted });
    return create(DeleteResponseSchema, { deleted: BigInt(deleted) });
  };
}
