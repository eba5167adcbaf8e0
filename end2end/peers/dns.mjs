// A real DNS server (npm dns2, UDP and TCP) on loopback for the SSO domain-verification tests:
// the server under test resolves through it with TIDEMARK_DNS_RESOLVER. It answers from a
// JSON file re-read at every query, so a test "publishes" a record by rewriting the file:
//
//   { "_tidemark-challenge.acme.example": ["tidemark-domain-verification=…"],  // TXT answers
//     "_tidemark-challenge.empty.example": [],                                 // NOERROR, no data
//     "_tidemark-challenge.broken.example": "SERVFAIL",                        // SERVFAIL
//     "hooks.internal.example": { "A": ["127.0.0.1"] } }                       // A answers
//
// A name that is not in the file is NXDOMAIN. Test use only.
//
//   node end2end/peers/dns.mjs --port 5353 --records FILE
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import dns2 from 'dns2';

const { Packet } = dns2;
const { values: args } = parseArgs({
  options: { port: { type: 'string' }, records: { type: 'string' } },
});
const port = Number(args.port);
const readRecords = () => {
  try {
    return JSON.parse(fs.readFileSync(args.records, 'utf8'));
  } catch {
    return {};
  }
};

const server = dns2.createServer({
  udp: true,
  tcp: true,
  handle(request, send) {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    const name = String(question?.name ?? '').replace(/\.$/, '').toLowerCase();
    const records = readRecords();
    const entry = records[name];
    if (entry === undefined) {
      response.header.rcode = Packet.RCODE?.NXDOMAIN ?? 3;
    } else if (entry === 'SERVFAIL') {
      response.header.rcode = Packet.RCODE?.SERVFAIL ?? 2;
    } else if (!Array.isArray(entry)) {
      if (question.type === Packet.TYPE.A) {
        for (const address of entry.A ?? []) {
          response.answers.push({ name: question.name, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 0, address });
        }
      }
    } else if (question.type === Packet.TYPE.TXT) {
      for (const value of entry) {
        response.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 0, data: value });
      }
    }
    send(response);
  },
});
server.on('requestError', (err) => console.error('undecodable query:', err.message));
await server.listen({ udp: { port, address: '127.0.0.1' }, tcp: { port, address: '127.0.0.1' } });
console.log(`DNS server on 127.0.0.1:${port} (udp+tcp), records from ${args.records}`);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, async () => { await server.close(); process.exit(0); });
