/**
 * A DNS server of a test's own, on loopback UDP: it answers A queries for
 * the names it is given with their addresses (one answer record each), AAAA
 * queries for them with no record, and anything else with NXDOMAIN. What a
 * client under test asks through `dns://127.0.0.1:PORT/name:port`, so that
 * one name really resolves to several servers without touching /etc/hosts.
 */
import { createSocket } from "node:dgram";

export interface DnsServer {
  /** 127.0.0.1:PORT, a DNS server address as resolvers take it. */
  address: string;
  /** The A queries answered so far (names, lowercase). */
  queries(): string[];
  stop(): Promise<void>;
}

/** The question's name and where the question section ends (after QTYPE and QCLASS). */
function question(message: Buffer): { name: string; type: number; end: number } {
  const labels: string[] = [];
  let at = 12;
  for (let length = message[at]!; length !== 0; length = message[at]!) {
    labels.push(message.subarray(at + 1, at + 1 + length).toString("ascii"));
    at += 1 + length;
  }
  at += 1;
  return { name: labels.join(".").toLowerCase(), type: message.readUInt16BE(at), end: at + 4 };
}

/** Starts the server; `names` maps a name to its IPv4 addresses. */
export async function startDnsServer(names: Record<string, readonly string[]>): Promise<DnsServer> {
  const records = new Map(Object.entries(names).map(([name, addresses]) => [name.toLowerCase(), addresses]));
  const asked: string[] = [];
  const socket = createSocket("udp4");
  socket.on("message", (query, peer) => {
    if (query.length < 12 || query.readUInt16BE(4) !== 1) return;
    const q = question(query);
    const addresses = records.get(q.name);
    const answers = addresses !== undefined && q.type === 1 ? addresses : [];
    if (q.type === 1) asked.push(q.name);
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // id
    // QR, authoritative, the query's RD, RA; NXDOMAIN for an unknown name.
    header.writeUInt16BE(0x8400 | (query.readUInt16BE(2) & 0x0100) | 0x0080 | (addresses === undefined ? 3 : 0), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const answerRecords = answers.map((address) => {
      const record = Buffer.alloc(16);
      record.writeUInt16BE(0xc00c, 0); // the question's name
      record.writeUInt16BE(1, 2); // A
      record.writeUInt16BE(1, 4); // IN
      record.writeUInt32BE(1, 6); // TTL 1 s
      record.writeUInt16BE(4, 10);
      address.split(".").forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
      return record;
    });
    socket.send(Buffer.concat([header, query.subarray(12, q.end), ...answerRecords]), peer.port, peer.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(0, "127.0.0.1", () => resolve());
  });
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries: () => [...asked],
    stop: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
