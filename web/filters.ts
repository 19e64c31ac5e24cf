import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type LogModuleVersion,
  LogModuleVersionSchema,
  type LogReadRequestSchema,
} from "../gen/reqlog/v1/log_service_pb.js";
import type { ViewState } from "./view-state.js";

type ReadInit = MessageInitShape<typeof LogReadRequestSchema>;

/** The picked module and version as Read, Tail and Stats name them; empty = every module. */
export function moduleVersions(state: Pick<ViewState, "module" | "version">): LogModuleVersion[] {
  // A version is picked within a module (the picker offers none without one).
  if (state.module === "") return [];
  return [create(LogModuleVersionSchema, { moduleId: state.module, ...(state.version ? { versionId: state.version } : {}) })];
}

/** Read's filters from the view (app, module, version, regexes, level, in-progress), without range or paging. */
export function readFilters(state: ViewState): ReadInit {
  return {
    appId: state.app,
    moduleVersion: moduleVersions(state),
    ...(state.regex !== "" ? { combinedLogRegex: state.regex } : {}),
    ...(state.host !== "" ? { hostRegex: state.host } : {}),
    ...(state.level !== undefined ? { minimumLogLevel: state.level } : {}),
    includeIncomplete: state.incomplete,
    includeAppLogs: true,
    // The table shows the most severe of a few lines; the detail reads them all.
    appLogsPerRequest: 5,
  };
}
