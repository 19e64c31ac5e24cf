import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's chromium, which playwright-core drives (no browser download: the machine has no internet but apt). */
const chromiumPath = "/usr/bin/chromium";

/**
 * Makes sure Debian's chromium is installed: when it is missing, installs it
 * with apt-get (as root, or through sudo), saying so on stderr. Fails with
 * the way to install it by hand when that cannot be done.
 */
function ensureChromium(): void {
  if (existsSync(chromiumPath)) return;
  const asRoot = process.getuid?.() === 0;
  const run = (args: string[]) =>
    execFileSync(asRoot ? args[0]! : "sudo", asRoot ? args.slice(1) : ["-n", ...args], {
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      timeout: 600_000,
    });
  process.stderr.write(`${chromiumPath} is missing: installing Debian's chromium with apt-get (about 20 s) for the browser tests\n`);
  try {
    // Another apt run (a second test worker, an unattended upgrade) may hold the lock for a while: wait for it.
    const lock = ["-o", "DPkg::Lock::Timeout=300"];
    try {
      run(["apt-get", ...lock, "install", "-y", "--no-install-recommends", "chromium"]);
    } catch {
      run(["apt-get", ...lock, "update"]);
      run(["apt-get", ...lock, "install", "-y", "--no-install-recommends", "chromium"]);
    }
  } catch (err) {
    throw new Error(
      `cannot install chromium for the browser tests (${(err as Error).message}); install it with: sudo apt-get install chromium`,
      { cause: err },
    );
  }
  if (!existsSync(chromiumPath)) throw new Error(`apt-get installed chromium, but ${chromiumPath} is still missing`);
}

/** Starts headless Debian chromium (installing it first when needed). */
export async function launchChromium(): Promise<Browser> {
  ensureChromium();
  return chromium.launch({ executablePath: chromiumPath, headless: true });
}
