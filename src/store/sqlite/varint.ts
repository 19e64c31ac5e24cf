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

export function createVarintReader(blob: Uint8Array) {
  let at = 0;
  return {
    get more(): boolean {
      return at < blob.length;
    },
    uint(): number {
      let n = 0;
      let scale = 1;
      for (;;) {
        const byte = blob[at++]!;
        n += (byte & 0x7f) * scale;
        if (byte < 0x80) return n;
        scale *= 0x80;
      }
    },
    text(): string {
      const length = this.uint();
      const s = Buffer.from(blob.buffer, blob.byteOffset + at, length).toString("utf8");
      at += length;
      return s;
    },
  };
}
