import { describe, expect, it } from "vitest";
import { compileLogFormat, formatText, namedFormats } from "../../src/ingest/log-format.js";

describe("nginx log_format compiler", () => {
  it("takes the directive as nginx.conf writes it: quoted pieces joined, escape= read", () => {
    expect(
      formatText(`log_format main escape=json '{"time":"$time_iso8601",'
                     '"request":"$request","status":$status}';`),
    ).toEqual({ text: '{"time":"$time_iso8601","request":"$request","status":$status}', escape: "json" });
    expect(formatText(`'$remote_addr \\'$remote_user\\'' "[$time_local]"`)).toEqual({ text: "$remote_addr '$remote_user'[$time_local]", escape: "default" });
    expect(formatText("$remote_addr $status")).toEqual({ text: "$remote_addr $status", escape: "default" });
  });

  it("reads ${braced} variables and JSON-escaped values", () => {
    const format = compileLogFormat(`escape=json '{"t":"\${time_iso8601}","r":"$request","ua":"$http_user_agent","s":$status}'`);
    expect(format.variables).toEqual(["time_iso8601", "request", "http_user_agent", "status"]);
    expect(format.match('{"t":"2026-11-18T11:06:40+00:00","r":"GET /a HTTP/1.1","ua":"x \\"q\\" \\u00e9\\\\","s":200}')).toEqual({
      time_iso8601: "2026-11-18T11:06:40+00:00",
      request: "GET /a HTTP/1.1",
      http_user_agent: 'x "q" é\\',
      status: "200",
    });
  });

  it("unescapes nginx's \\xHH (bytes of UTF-8) and Apache's \\\" and \\\\ in a combined line", () => {
    const combined = compileLogFormat(namedFormats.combined);
    const nginx = combined.match('::1 - - [18/Nov/2026:11:06:40 +0000] "GET /caf\\xC3\\xA9 HTTP/1.1" 200 5 "-" "a\\x22b\\x5Cc"');
    expect(nginx).toMatchObject({ remote_addr: "::1", request: "GET /café HTTP/1.1", http_user_agent: 'a"b\\c' });
    const apache = combined.match('10.0.0.1 ident bob [18/Nov/2026:11:06:40 -0500] "GET / HTTP/1.0" 304 - "-" "say \\"hi\\" \\\\ \\t"');
    expect(apache).toMatchObject({ remote_ident: "ident", remote_user: "bob", body_bytes_sent: "-", http_user_agent: 'say "hi" \\ \t' });
  });

  it("keeps a quoted field right when the writer did not escape a quote in it (the forge's user agent)", () => {
    const forge = compileLogFormat(namedFormats.forge);
    expect(forge.match('10.0.0.1:4312 - alice [18/Nov/2026:11:06:40 +0000] "GET /x HTTP/1.1" 200 3 "" "agent "with" quotes" "x"')).toMatchObject({
      remote_addr: "10.0.0.1:4312",
      http_referer: "",
      http_user_agent: 'agent "with" quotes" "x',
    });
  });

  it("matches a fixed-shape variable only in its shape", () => {
    const format = compileLogFormat("$status $request_time [$time_local] $request");
    expect(format.match("200 0.004 [18/Nov/2026:11:06:40 +0000] GET / HTTP/1.1")).toBeDefined();
    expect(format.match("200 fast [18/Nov/2026:11:06:40 +0000] GET / HTTP/1.1")).toBeUndefined();
    expect(format.explain("200 fast [18/Nov/2026:11:06:40 +0000] GET / HTTP/1.1")).toBe('expected $request_time (seconds or -) at column 5, found "fast [18/Nov/2026:11:06:…"');
    expect(format.explain("20 0.1 [x] y")).toBe('expected $status (a 3-digit status) at column 1, found "20 0.1 [x] y"');
  });

  it("refuses a format without variables, or naming one twice", () => {
    expect(() => compileLogFormat("just text")).toThrow('log format "just text" has no $variables');
    expect(() => compileLogFormat("$status $status")).toThrow('log format "$status $status" names a variable twice');
    expect(() => compileLogFormat("'$status")).toThrow(`log format: cannot read the quoted pieces of "'$status" at column 1`);
  });
});
