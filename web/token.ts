/**
 * The access token, kept in the browser's session storage: it lasts as long
 * as the tab and is never written to the URL or to disk.
 */
const key = "reqlog.token";

export function loadToken(): string {
  try {
    return sessionStorage.getItem(key) ?? "";
  } catch {
    return ""; // storage disabled: the token lives only in the field
  }
}

export function saveToken(token: string): void {
  try {
    if (token === "") sessionStorage.removeItem(key);
    else sessionStorage.setItem(key, token);
  } catch {
    // storage disabled: nothing to keep it in
  }
}
