/**
 * Unsigned LEB128 varints, the packing of the rollups' blobs (histograms,
 * top names): small numbers, which most counts are, take one byte.
 */
export function createVarintWriter() {
  const bytes: number[] = [];
  return {
    uint(n: number): void {
      while (n >= 0x80) {
        bytes.push((n % 0x80) | 0x80);
        n = Math.floor(n / 0x80);
      }
      bytes.push(n);
    },
    /** A string as its UTF-8 length, then its bytes. */
    text(s: string): void {
      const utf8 = Buffer.from(s, "utf8");
      this.uint(utf8.length);
      for (const b of utf8) bytes.push(b);
    },
    done(): Buffer {
      return Buffer.from(bytes);
    },
  };
}

/**
 * A read position in a blob. A class, not closures: Stats decodes thousands
 * of blobs a call, and one small object each is what it allocates.
 */
export class VarintReader {
  private at = 0;

  constructor(private readonly blob: Uint8Array) {}

  get more(): boolean {
    return this.at < this.blob.length;
  }

  uint(): number {
    const blob = this.blob;
    let n = 0;
    let scale = 1;
    for (;;) {
      const byte = blob[this.at++]!;
      n += (byte & 0x7f) * scale;
      if (byte < 0x80) return n;
      scale *= 0x80;
    }
  }

  text(): string {
    const length = this.uint();
    const s = Buffer.from(this.blob.buffer, this.blob.byteOffset + this.at, length).toString("utf8");
    this.at += length;
    return s;
  }
}
