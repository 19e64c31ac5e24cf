import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { anonymizeIp } from "../../src/write/anonymize-ip.js";
import { compileRedactPattern, createPrivacy, defaultPrivacyOptions } from "../../src/write/privacy.js";
import { createRedactor, defaultRedactedParams, redactionMarker } from "../../src/write/redactor.js";

const redactor = createRedactor({ defaults: true, params: [], patterns: [] });
const redact = redactor.text;

/** A forge's live artifact link: valid for an hour, no token needed. */
const signedUrl = "/api/v1/repos/alice/app/actions/artifacts/1/zip/raw?expires=1795609738&sig=8f1c0a5e2b7d4c39a6e1f0b2c4d6e8fa";

describe("redaction of credentials in text", () => {
  it("redacts the forge's signature and keeps the URL's shape", () => {
    expect(redactor.url(signedUrl)).toBe("/api/v1/repos/alice/app/actions/artifacts/1/zip/raw?expires=1795609738&sig=REDACTED");
    expect(redact(signedUrl)).toBe("/api/v1/repos/alice/app/actions/artifacts/1/zip/raw?expires=1795609738&sig=REDACTED");
  });

  it("redacts every default parameter, whatever its case, in a query and in a line of text", () => {
    for (const name of defaultRedactedParams) {
      for (const shown of [name, name.toUpperCase(), name.toLowerCase()]) {
        expect(redact(`/p?a=1&${shown}=s3cr3tValue&b=2`)).toBe(`/p?a=1&${shown}=REDACTED&b=2`);
        expect(redact(`GET https://h/p?${shown}=s3cr3tValue failed`)).toBe(`GET https://h/p?${shown}=REDACTED failed`);
        expect(redact(`login failed user=alice ${shown}=s3cr3tValue`)).toBe(`login failed user=alice ${shown}=REDACTED`);
      }
    }
  });

  it("leaves parameters alone whose names only contain a credential's name", () => {
    expect(redact("/p?xsig=1&tokens=2&signature_version=4&sig_=5")).toBe("/p?xsig=1&tokens=2&signature_version=4&sig_=5");
  });

  it("redacts the userinfo of URLs, a token given as the user name too", () => {
    expect(redact("https://alice:hunter2@forge.example/x")).toBe("https://REDACTED@forge.example/x");
    expect(redactor.url("https://alice:hunter2@forge.example/x")).toBe("https://REDACTED@forge.example/x");
    expect(redact("referred by https://ghp_abcdef0123456789@github.com/a/b.git")).toBe(
      "referred by https://REDACTED@github.com/a/b.git",
    );
    expect(redact("https://forge.example/u?email=a@b.example")).toBe("https://forge.example/u?email=a@b.example");
  });

  it("redacts Bearer, Basic and the forge's token scheme in app lines", () => {
    expect(redact("call failed: Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc-_")).toBe(
      "call failed: Authorization: Bearer REDACTED",
    );
    const basic = Buffer.from("alice:hunter2").toString("base64");
    expect(redact(`upstream said 401 to authorization=Basic ${basic}`)).toBe("upstream said 401 to authorization=Basic REDACTED");
    expect(redact('{"authorization":"token 0123456789abcdef0123"}')).toBe('{"authorization":"token REDACTED"}');
    expect(redact("Private-Token: glpat-xxxxxxxxxxxxxxxxxxxx")).toBe("Private-Token: REDACTED");
  });

  it("leaves prose after Bearer and Basic alone", () => {
    expect(redact("missing bearer token; Basic auth is off")).toBe("missing bearer token; Basic auth is off");
  });

  it("redacts reqlog's own tokens, keeping their public key id", () => {
    const token = `rql_0123456789abcdef_${"A".repeat(43)}`;
    expect(redact(`tried ${token}`)).toBe("tried rql_0123456789abcdef_REDACTED");
  });

  it("adds the operator's parameters and patterns, redacting a pattern's groups when it has any", () => {
    const privacy = createPrivacy({
      ...defaultPrivacyOptions,
      redactParams: ["session"],
      redactPatterns: ["card=(\\d{4})\\d{8}(\\d{4})", "ssn \\d{3}-\\d{2}-\\d{4}"],
    });
    expect(privacy.redact.text("/p?SESSION=abc&sig=def")).toBe("/p?SESSION=REDACTED&sig=REDACTED");
    expect(privacy.redact.text("paid with card=1234567890123456 ok")).toBe("paid with card=REDACTED56789012REDACTED ok");
    expect(privacy.redact.text("user ssn 123-45-6789 seen")).toBe("user REDACTED seen");
  });

  it("redacts nothing built in with --no-default-redaction, only what the operator added", () => {
    const privacy = createPrivacy({ ...defaultPrivacyOptions, defaultRedaction: false, redactParams: ["session"] });
    expect(privacy.redact.text("/p?session=abc&sig=def")).toBe("/p?session=REDACTED&sig=def");
  });

  it("refuses an invalid --redact-pattern naming the flag", () => {
    expect(() => compileRedactPattern("(a")).toThrow(/--redact-pattern: "\(a" is not a valid RE2 pattern/);
    expect(() => createPrivacy({ ...defaultPrivacyOptions, redactParams: ["a b"] })).toThrow(/--redact-param: "a b"/);
  });
});

/** URL parts with no separators, quotes or spaces in them. */
const urlText = fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/);
const plainName = urlText.filter((n) => !defaultRedactedParams.some((d) => d.toLowerCase() === n.toLowerCase()));
const secretName = fc.constantFrom(...defaultRedactedParams).chain((n) => fc.constantFrom(n, n.toLowerCase(), n.toUpperCase()));
const param = fc.record({ name: fc.oneof(plainName, secretName), value: urlText });
const url = fc.record({
  origin: fc.constantFrom("", "https://forge.example", "http://127.0.0.1:3000"),
  path: fc.array(urlText, { minLength: 1, maxLength: 5 }),
  query: fc.array(param, { maxLength: 6 }),
});
const isSecret = (name: string) => defaultRedactedParams.some((d) => d.toLowerCase() === name.toLowerCase());

describe("redaction, properties", () => {
  it("keeps a URL's shape: its path, and every parameter's name in order, each value kept or the marker", () => {
    fc.assert(
      fc.property(url, ({ origin, path, query }) => {
        const text = `${origin}/${path.join("/")}${query.length ? "?" : ""}${query.map((p) => `${p.name}=${p.value}`).join("&")}`;
        const out = redactor.url(text);
        expect(redact(text)).toBe(out);
        const [head, search] = out.split("?") as [string, string | undefined];
        expect(head).toBe(`${origin}/${path.join("/")}`);
        const pairs = search === undefined ? [] : search.split("&").map((kv) => kv.split("="));
        expect(pairs).toEqual(query.map((p) => [p.name, isSecret(p.name) ? redactionMarker : p.value]));
      }),
    );
  });

  it("removes every default parameter's value, wherever the URL sits in a line", () => {
    fc.assert(
      fc.property(url, fc.string(), fc.string(), ({ path, query }, before, after) => {
        const link = `https://forge.example/${path.join("/")}?${query.map((p) => `${p.name}=${p.value}`).join("&")}`;
        const out = redact(`${before} "${link}" ${after}`);
        const shown = /"https:\/\/forge\.example\/[^"?]*\?([^"]*)"/.exec(out)![1]!;
        const values = shown.split("&").filter((kv) => kv !== "").map((kv) => kv.split("="));
        expect(values.filter(([name]) => isSecret(name!)).every(([, value]) => value === redactionMarker)).toBe(true);
        expect(values.map(([name]) => name)).toEqual(query.map((p) => p.name));
      }),
    );
  });

  it("is idempotent: redacting redacted text changes nothing", () => {
    const privacy = createPrivacy({ ...defaultPrivacyOptions, redactParams: ["session"], redactPatterns: ["card=(\\d+)"] });
    const pieces = fc.oneof(
      fc.string(),
      url.map(({ origin, path, query }) => `${origin}/${path.join("/")}?${query.map((p) => `${p.name}=${p.value}`).join("&")}`),
      fc.constantFrom("Bearer ", "bearer\t", "Basic ", "Authorization: token ", "Private-Token: ", "rql_0123456789abcdef_", "https://", "@", "=", "&", "?", "card=", "session="),
      fc.stringMatching(/^[A-Za-z0-9+/=_-]{0,30}$/),
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 12 }), (parts) => {
        const once = privacy.redact.text(parts.join(""));
        expect(privacy.redact.text(once)).toBe(once);
        const url = privacy.redact.url(parts.join(""));
        expect(privacy.redact.url(url)).toBe(url);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("IP anonymisation", () => {
  it("zeroes the last IPv4 octet and the last 80 bits of IPv6, and keeps what is not an address", () => {
    expect(anonymizeIp("203.0.113.77")).toBe("203.0.113.0");
    expect(anonymizeIp("2001:db8:85a3:8d3:1319:8a2e:370:7348")).toBe("2001:db8:85a3::");
    expect(anonymizeIp("2001:db8::1")).toBe("2001:db8::");
    expect(anonymizeIp("::1")).toBe("::");
    expect(anonymizeIp("::ffff:198.51.100.9")).toBe("::ffff:198.51.100.0");
    expect(anonymizeIp("forge.internal")).toBe("forge.internal");
    expect(anonymizeIp("")).toBe("");
  });

  it("is idempotent and keeps the network: the first 3 octets / 48 bits", () => {
    const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join("."));
    const v6 = fc.array(fc.nat(0xffff), { minLength: 8, maxLength: 8 }).map((g) => g.map((x) => x.toString(16)).join(":"));
    fc.assert(
      fc.property(fc.oneof(v4, v6), (ip) => {
        const once = anonymizeIp(ip);
        expect(anonymizeIp(once)).toBe(once);
        if (ip.includes(".")) expect(once).toBe(`${ip.split(".").slice(0, 3).join(".")}.0`);
        else expect(new URL(`http://[${once}]/`).hostname).toBe(new URL(`http://[${ip.split(":").slice(0, 3).join(":")}::]/`).hostname);
      }),
    );
  });
});
