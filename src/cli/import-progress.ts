import { SingleBar } from "cli-progress";

/** What the bar shows while an import reads its files. */
export interface ImportProgress {
  /** Bytes read so far of `total` (undefined: stdin, no total) and lines so far. */
  update(bytesRead: number, lines: number): void;
  stop(): void;
}

function bytes(n: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "--";
  const s = Math.round(seconds);
  return s >= 3600 ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m` : s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}

/**
 * A progress bar (cli-progress) on `stream`, a terminal: bytes read of the
 * total, lines and lines per second, and the time left at the rate so far.
 * Without a total (stdin), the bytes and rates alone.
 */
export function createImportProgress(total: number | undefined, stream: NodeJS.WriteStream): ImportProgress {
  const started = Date.now();
  let lines = 0;
  const bar = new SingleBar({
    stream,
    hideCursor: true,
    fps: 5,
    format: (options, params) => {
      const seconds = (Date.now() - started) / 1000;
      const rate = seconds > 0 ? Math.round(lines / seconds) : 0;
      const counts = `${lines.toLocaleString("en-US")} lines, ${rate.toLocaleString("en-US")} lines/s`;
      if (total === undefined) return `${bytes(params.value)} read | ${counts} | ${duration(seconds)}`;
      const done = total > 0 ? params.value / total : 1;
      const width = options.barsize ?? 30;
      const filled = Math.round(done * width);
      const left = done > 0 ? (seconds / done) * (1 - done) : Infinity;
      return `[${"=".repeat(filled)}${"-".repeat(width - filled)}] ${Math.floor(done * 100)}% ${bytes(params.value)}/${bytes(total)} | ${counts} | ETA ${duration(left)}`;
    },
    barsize: 30,
  });
  bar.start(total ?? 0, 0);
  return {
    update(bytesRead, lineCount) {
      lines = lineCount;
      bar.update(bytesRead);
    },
    stop() {
      bar.stop();
    },
  };
}
