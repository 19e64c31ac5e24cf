import RE2 from "re2";
import { anonymizeIp } from "./anonymize-ip.js";
import { createRedactor, type Redactor } from "./redactor.js";

/**
 * What the server is told about privacy (serve's --redact-param,
 * --redact-pattern, --no-default-redaction, --anonymize-ip): plain data, so
 * it crosses to the prepare workers as it is.
 */
export interface PrivacyOptions {
  /** The built-in redaction rules (redactor.ts); on unless --no-default-redaction. */
  defaultRedaction: boolean;
  /** Parameter names added to the redacted ones. */
  redactParams: readonly string[];
  /** RE2 patterns whose matches are redacted in resources, referrers, combined lines and app lines. */
  redactPatterns: readonly string[];
  /** Store client IPs with the host part zeroed (anonymize-ip.ts). */
  anonymizeIp: boolean;
}

export const defaultPrivacyOptions: PrivacyOptions = {
  defaultRedaction: true,
  redactParams: [],
  redactPatterns: [],
  anonymizeIp: false,
};

/** What the write path applies to every record and line before anything is derived from it or stored. */
export interface Privacy {
  redact: Redactor;
  /** The client IP as it is stored. */
  ip(ip: string): string;
}

/** A --redact-pattern compiled as RE2 (linear time, as every pattern reqlog runs); the error names the flag. */
export function compileRedactPattern(source: string): RE2 {
  try {
    // d: match indices, so only a pattern's groups can be redacted.
    return new RE2(source, "gud");
  } catch (err) {
    throw new Error(`--redact-pattern: "${source}" is not a valid RE2 pattern: ${err instanceof Error ? err.message : err}`);
  }
}

/** A --redact-param: a parameter name as it appears before "=". */
export function checkRedactParam(name: string): string {
  if (!/^[^\s=&;?#"'<>]+$/.test(name)) {
    throw new Error(`--redact-param: "${name}" is not a parameter name (no spaces, quotes or any of = & ; ? #)`);
  }
  return name;
}

export function createPrivacy(options: PrivacyOptions): Privacy {
  const redact = createRedactor({
    defaults: options.defaultRedaction,
    params: options.redactParams.map(checkRedactParam),
    patterns: options.redactPatterns.map(compileRedactPattern),
  });
  return { redact, ip: options.anonymizeIp ? anonymizeIp : (ip) => ip };
}

/** The defaults: what a server started with no privacy flags applies. */
export const defaultPrivacy: Privacy = createPrivacy(defaultPrivacyOptions);
