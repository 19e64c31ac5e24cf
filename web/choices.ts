import type { Api } from "./api.js";

/** Modules of an app and versions of each, offered as suggestions (any other may be typed). */
export interface Choices {
  modules: string[];
  versionsOf(module: string): string[];
}

const sorted = (items: Iterable<string>) => [...new Set(items)].sort((a, b) => a.localeCompare(b, "en", { numeric: true }));

/**
 * Suggestions from cheap calls only: the modules and versions of the
 * instance statuses (ListStatus) and the versions Usage has seen (of every
 * module: Usage does not name modules). A failed call just suggests less.
 */
export async function loadChoices(api: Api, app: string, signal: AbortSignal): Promise<Choices> {
  const pairs = new Map<string, Set<string>>([["default", new Set()]]);
  const anyModule = new Set<string>();
  await Promise.allSettled([
    api.listStatus({ appId: app }, { signal }).then((list) => {
      for (const s of list.status) {
        if (!pairs.has(s.moduleId)) pairs.set(s.moduleId, new Set());
        pairs.get(s.moduleId)!.add(s.versionId);
      }
    }),
    api.usage({ appId: app, versionsOnly: true }, { signal }).then((usage) => usage.usage.forEach((u) => anyModule.add(u.versionId))),
  ]);
  return {
    modules: sorted(pairs.keys()),
    versionsOf: (module) => sorted([...(pairs.get(module) ?? []), ...anyModule]),
  };
}
