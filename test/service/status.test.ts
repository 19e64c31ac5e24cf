import { describe, expect, it } from "vitest";
import { Code } from "../../src/reqlog-error.js";
import { t0 } from "../helpers/fixtures.js";
import { callError } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer({ limits: { maxStatusBytes: 32 } });

const instance = (id: string, module?: string) => ({
  "reqlog-app-id": "forge",
  "reqlog-version-id": "v1",
  "reqlog-instance-id": id,
  ...(module ? { "reqlog-module-id": module } : {}),
});

function setStatus(text: string | undefined, headers: Record<string, string>) {
  return ts.client.setStatus(text === undefined ? {} : { status: text }, { headers });
}

function listStatus(init: { appId?: string; moduleId?: string; versionId?: string }) {
  return ts.client.listStatus(init);
}

describe("SetStatus and ListStatus", () => {
  it("keeps the latest status of each instance, with its time", async () => {
    ts.setNow(t0);
    await setStatus("starting", instance("i-1"));
    ts.setNow(t0 + 5n);
    await setStatus("serving", instance("i-1"));
    await setStatus("draining", instance("i-2", "git"));

    const all = await listStatus({ appId: "forge" });
    expect(all.status.map((s) => [s.moduleId, s.versionId, s.instanceId, s.status, s.time])).toEqual([
      ["default", "v1", "i-1", "serving", t0 + 5n],
      ["git", "v1", "i-2", "draining", t0 + 5n],
    ]);
    const git = await listStatus({ appId: "forge", moduleId: "git" });
    expect(git.status.map((s) => s.instanceId)).toEqual(["i-2"]);
    expect((await listStatus({ appId: "other" })).status).toEqual([]);
  });

  it.each([
    ["an empty status", "", instance("i-1"), Code.INVALID_ARGUMENT, "status is empty"],
    ["a missing status", undefined, instance("i-1"), Code.INVALID_ARGUMENT, "required field not set: status"],
    [
      "a status over max-status-bytes",
      "x".repeat(33),
      instance("i-1"),
      Code.INVALID_ARGUMENT,
      "status size in bytes is 33, over the limit max-status-bytes=32",
    ],
    ["no app id", "ok", { "reqlog-version-id": "v1" }, Code.INVALID_ARGUMENT, "SetStatus needs call metadata reqlog-app-id"],
  ])("refuses %s", async (_name, text, metadata, code, message) => {
    await setStatus("kept", instance("i-1"));
    const err = await callError(setStatus(text, metadata));
    expect(err).toEqual({ code, details: message, reason: "INVALID_REQUEST" });
    expect((await listStatus({ appId: "forge" })).status.map((s) => s.status)).toEqual(["kept"]);
  });

  it("refuses ListStatus without an app id", async () => {
    const err = await callError(listStatus({}));
    expect(err).toEqual({ code: Code.INVALID_ARGUMENT, details: "required field not set: app_id", reason: "INVALID_REQUEST" });
  });
});
