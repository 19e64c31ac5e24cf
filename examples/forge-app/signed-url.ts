import { createHmac, timingSafeEqual } from "node:crypto";

/** How long a signed artifact URL is valid (seeds/forge-http-api.md: 1 hour). */
export const signedUrlValidityMs = 60 * 60 * 1000;

export interface UrlSigner {
  /** The query string (`expires=…&sig=…`) that authorizes downloading `artifactId` for the next hour. */
  sign(artifactId: string): string;
  /** Why `expires` and `sig` do not authorize `artifactId` now, or undefined when they do. */
  refusal(artifactId: string, expires: unknown, sig: unknown): string | undefined;
}

/**
 * Signed artifact URLs: an HMAC-SHA256 over the artifact id and the expiry
 * (seconds since the epoch), so a changed id, a changed expiry or a forged
 * signature fails the check, and a URL is good until its expiry.
 */
export function createUrlSigner(key: string | Buffer, now: () => number = Date.now): UrlSigner {
  const mac = (artifactId: string, expires: string) =>
    createHmac("sha256", key).update(`${artifactId}\n${expires}`).digest();
  return {
    sign(artifactId) {
      const expires = String(Math.floor((now() + signedUrlValidityMs) / 1000));
      return `expires=${expires}&sig=${mac(artifactId, expires).toString("base64url")}`;
    },
    refusal(artifactId, expires, sig) {
      if (typeof expires !== "string" || !/^\d{1,12}$/.test(expires) || typeof sig !== "string") {
        return "signed URL is missing its expires or sig";
      }
      const given = Buffer.from(sig, "base64url");
      const expected = mac(artifactId, expires);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "signed URL signature is invalid";
      if (Number(expires) * 1000 < now()) return "signed URL expired";
      return undefined;
    },
  };
}
