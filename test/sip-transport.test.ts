/**
 * The SIP transport (src/sip/transport.ts, transport-stream.ts, transport-rules.ts) over real sockets
 * on 127.0.0.1: Via stamping exactly as RFC 3261 §18.2.1 and RFC 3581's examples write it, responses
 * sent where §18.2.2 says (rport, sent-by, the request's own connection), TCP framing across cut
 * writes, keep-alive pongs, outbound connections and their failures, hostile input (counted, logged
 * once a second, a 400 when the request is readable, broken streams closed), connection limits and
 * idle closing, TLS with a certificate made by `openssl` at test time, and nothing left open by close().
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { header, headers } from '../src/sip/headers.js';
import {
  isRequest,
  parseMessage,
  type SipMessage,
  type SipRequest,
  type SipResponse,
  serializeMessage,
} from '../src/sip/message.js';
import { buildResponse } from '../src/sip/response.js';
import type { Peer } from '../src/sip/transaction-common.js';
import {
  badRequestFor,
  responseDestination,
  SipTransport,
  type SipTransportOptions,
  stampVia,
} from '../src/sip/transport.js';
import { connectionKey, plainAddress } from '../src/sip/transport-stream.js';
import type { SipTransportName } from '../src/sip/transport-types.js';
import { sip } from './support/sip-messages.js';

const LOOPBACK = '127.0.0.1';

function request(via: string, method = 'OPTIONS', extra: string[] = []): Buffer {
  return sip([
    `${method} sip:switchboard@127.0.0.1 SIP/2.0`,
    `Via: ${via}`,
    'Max-Forwards: 70',
    'From: <sip:trunk@198.51.100.7>;tag=77aa',
    'To: <sip:switchboard@127.0.0.1>',
    `Call-ID: ${randomBytes(6).toString('hex')}@198.51.100.7`,
    `CSeq: 1 ${method}`,
    ...extra,
    'Content-Length: 0',
  ]);
}

const asRequest = (bytes: Buffer) => parseMessage(bytes) as SipRequest;

async function waitFor<T>(read: () => T | undefined | false, ms = 3000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Heard {
  message: SipMessage;
  source: Peer;
  transport: SipTransportName;
}

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close();
});

async function start(options: Partial<SipTransportOptions> = {}) {
  const heard: Heard[] = [];
  const warnings: { obj: object; msg: string }[] = [];
  const transportErrors: { destination: Peer; error: Error }[] = [];
  const transport = await SipTransport.listen({
    host: LOOPBACK,
    port: 0,
    onMessage: (message, source, name) => heard.push({ message, source, transport: name }),
    onTransportError: (destination, error) => transportErrors.push({ destination, error }),
    log: { warn: (obj, msg) => warnings.push({ obj, msg }) },
    ...options,
  });
  open.push(transport);
  return { transport, heard, warnings, transportErrors };
}

/** A UDP socket on 127.0.0.1 that keeps what it receives. */
async function udpPeer() {
  const socket = dgram.createSocket('udp4');
  const received: Buffer[] = [];
  socket.on('message', (bytes) => received.push(bytes));
  await new Promise<void>((resolve) => socket.bind(0, LOOPBACK, resolve));
  const peer = {
    port: socket.address().port,
    received,
    send: (bytes: Buffer, port: number) =>
      new Promise<void>((resolve, reject) =>
        socket.send(bytes, port, LOOPBACK, (error) => (error ? reject(error) : resolve())),
      ),
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
  open.push(peer);
  return peer;
}

/** A TCP client connected to the transport that keeps what it reads. */
async function tcpClient(port: number) {
  const socket = net.connect({ host: LOOPBACK, port });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const chunks: Buffer[] = [];
  let closed = false;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  socket.on('close', () => {
    closed = true;
  });
  const client = {
    socket,
    port: socket.localPort as number,
    text: () => Buffer.concat(chunks).toString('utf8'),
    closed: () => closed,
    close: () => socket.destroy(),
  };
  open.push(client);
  return client;
}

/** Answers `request` where §18.2.2 says, over the transport it came on. */
function answer(transport: SipTransport, heard: Heard, status = 200): SipResponse {
  const response = buildResponse(heard.message as SipRequest, status, { toTag: 'ab12' });
  transport.send(response, responseDestination(response, heard.transport), heard.transport);
  return response;
}

describe('transport rules', () => {
  it('stamps received and rport exactly as RFC 3581 §4 and RFC 3261 §18.2.1 write them', () => {
    const rfc3581 = stampVia(asRequest(request('SIP/2.0/UDP 10.1.1.1:4540;rport;branch=z9hG4bKkjshdyff')), {
      host: '192.0.2.1',
      port: 9988,
    });
    expect(header(rfc3581, 'Via')).toBe(
      'SIP/2.0/UDP 10.1.1.1:4540;received=192.0.2.1;rport=9988;branch=z9hG4bKkjshdyff',
    );
    const rfc3261 = stampVia(asRequest(request('SIP/2.0/UDP bobspc.biloxi.com:5060;branch=z9hG4bK74bf9')), {
      host: '192.0.2.4',
      port: 5060,
    });
    expect(header(rfc3261, 'Via')).toBe(
      'SIP/2.0/UDP bobspc.biloxi.com:5060;branch=z9hG4bK74bf9;received=192.0.2.4',
    );
    // RFC 3581 §4: with an empty rport, received is added even when it equals the sent-by host.
    const same = stampVia(asRequest(request('SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKx;rport')), {
      host: '192.0.2.1',
      port: 5070,
    });
    expect(header(same, 'Via')).toBe(
      'SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKx;received=192.0.2.1;rport=5070',
    );
  });

  it('leaves a Via alone when its sent-by is the source, and touches only the top one', () => {
    const untouched = asRequest(request('SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKx'));
    expect(stampVia(untouched, { host: '192.0.2.1', port: 40000 })).toBe(untouched);
    const listed = asRequest(
      request(
        'SIP/2.0/UDP  proxy.example.com ; branch=z9hG4bKa ;rport, SIP/2.0/UDP 10.0.0.9;branch=z9hG4bKb;rport',
        'OPTIONS',
        ['Via: SIP/2.0/TCP 10.0.0.8;rport;branch=z9hG4bKc'],
      ),
    );
    const stamped = stampVia(listed, { host: '198.51.100.7', port: 5062 });
    expect(stamped.headers.map((field) => field.name)).toEqual(listed.headers.map((field) => field.name));
    expect(headers(stamped, 'Via')).toEqual([
      'SIP/2.0/UDP  proxy.example.com;branch=z9hG4bKa;received=198.51.100.7;rport=5062',
      'SIP/2.0/UDP 10.0.0.9;branch=z9hG4bKb;rport',
      'SIP/2.0/TCP 10.0.0.8;rport;branch=z9hG4bKc',
    ]);
    expect(stamped.headers.filter((field) => field.name !== 'Via')).toEqual(
      listed.headers.filter((field) => field.name !== 'Via'),
    );
  });

  it('sends a response to received and rport, else to the sent-by port, else to the default port', () => {
    const response = (via: string) => buildResponse(asRequest(request(via)), 200);
    expect(
      responseDestination(response('SIP/2.0/UDP 10.1.1.1:4540;received=192.0.2.1;rport=9988'), 'udp'),
    ).toEqual({ host: '192.0.2.1', port: 9988 });
    expect(
      responseDestination(response('SIP/2.0/UDP bobspc.biloxi.com:5070;received=192.0.2.4'), 'udp'),
    ).toEqual({ host: '192.0.2.4', port: 5070 });
    expect(responseDestination(response('SIP/2.0/TCP 192.0.2.9;branch=z9hG4bKq'), 'tcp')).toEqual({
      host: '192.0.2.9',
      port: 5060,
    });
    expect(responseDestination(response('SIP/2.0/TLS [2001:db8::9];branch=z9hG4bKq'), 'tls')).toEqual({
      host: '2001:db8::9',
      port: 5061,
    });
  });

  it('names peers the same way whichever socket saw them', () => {
    expect(plainAddress('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(plainAddress('2001:db8::1')).toBe('2001:db8::1');
    expect(connectionKey('tcp', { host: '2001:DB8::1', port: 5060 })).toBe('tcp|[2001:db8::1]:5060');
    expect(connectionKey('tls', { host: '192.0.2.1', port: 5061 })).not.toBe(
      connectionKey('tcp', { host: '192.0.2.1', port: 5061 }),
    );
  });

  it('builds a 400 for a readable bad request, and nothing for an ACK or unreadable bytes', () => {
    const bad = request('SIP/2.0/UDP 10.1.1.1:4540;rport;branch=z9hG4bKbad')
      .toString()
      .replace('CSeq: 1 OPTIONS', 'CSeq: 1 INVITE');
    expect(() => parseMessage(Buffer.from(bad))).toThrow();
    const answer400 = badRequestFor(Buffer.from(bad), { host: '192.0.2.1', port: 9988 });
    expect(answer400?.status).toBe(400);
    expect(header(answer400 as SipResponse, 'Via')).toBe(
      'SIP/2.0/UDP 10.1.1.1:4540;received=192.0.2.1;rport=9988;branch=z9hG4bKbad',
    );
    expect(header(answer400 as SipResponse, 'To')).toMatch(/^<sip:switchboard@127\.0\.0\.1>;tag=[\w-]+$/);
    expect(header(answer400 as SipResponse, 'CSeq')).toBe('1 INVITE');
    const ack = bad.replace(/^OPTIONS/, 'ACK');
    expect(badRequestFor(Buffer.from(ack), { host: '192.0.2.1', port: 9988 })).toBeUndefined();
    expect(badRequestFor(randomBytes(300), { host: '192.0.2.1', port: 9988 })).toBeUndefined();
    const noCallId = bad.replace(/Call-ID: .*\r\n/, '');
    expect(badRequestFor(Buffer.from(noCallId), { host: '192.0.2.1', port: 9988 })).toBeUndefined();
    const response = bad.replace(/^OPTIONS .*\r\n/, 'SIP/2.0 200 OK\r\n');
    expect(badRequestFor(Buffer.from(response), { host: '192.0.2.1', port: 9988 })).toBeUndefined();
  });
});

describe('SipTransport over UDP', () => {
  it('binds UDP and TCP on one free port and reports its public address', async () => {
    const { transport } = await start({ publicHost: '203.0.113.10' });
    const { port } = transport.localAddress('udp');
    expect(port).toBeGreaterThan(0);
    expect(transport.localAddress('tcp')).toEqual({ host: '203.0.113.10', port });
    expect(() => transport.localAddress('tls')).toThrow(RangeError);
    expect([transport.reliable('udp'), transport.reliable('tcp'), transport.reliable('tls')]).toEqual([
      false,
      true,
      true,
    ]);
    const client = await tcpClient(port); // TCP answers on the very same number
    expect(client.socket.remotePort).toBe(port);
  });

  it('hands a request up with received and rport stamped, and its response reaches the rport', async () => {
    const { transport, heard } = await start();
    const phone = await udpPeer();
    await phone.send(
      request('SIP/2.0/UDP 10.1.1.1:4540;rport;branch=z9hG4bKkjshdyff'),
      transport.localAddress('udp').port,
    );
    const got = await waitFor(() => heard[0]);
    expect(got.transport).toBe('udp');
    expect(got.source).toEqual({ host: LOOPBACK, port: phone.port });
    expect(header(got.message, 'Via')).toBe(
      `SIP/2.0/UDP 10.1.1.1:4540;received=127.0.0.1;rport=${phone.port};branch=z9hG4bKkjshdyff`,
    );
    answer(transport, got);
    const reply = parseMessage(await waitFor(() => phone.received[0])) as SipResponse;
    expect(reply.status).toBe(200);
    expect(header(reply, 'Via')).toBe(header(got.message, 'Via'));
    expect(transport.stats).toMatchObject({ received: 1, sent: 1, parseErrors: 0, connections: 0 });
  });

  it('without rport sends the response to the sent-by port, not back to the source port', async () => {
    const { transport, heard } = await start();
    const sender = await udpPeer();
    const listener = await udpPeer();
    await sender.send(
      request(`SIP/2.0/UDP 127.0.0.1:${listener.port};branch=z9hG4bK1`),
      transport.localAddress('udp').port,
    );
    const got = await waitFor(() => heard[0]);
    expect(header(got.message, 'Via')).toBe(`SIP/2.0/UDP 127.0.0.1:${listener.port};branch=z9hG4bK1`);
    answer(transport, got, 486);
    expect((parseMessage(await waitFor(() => listener.received[0])) as SipResponse).status).toBe(486);
    expect(sender.received).toEqual([]);
  });

  it('survives garbage: counts it, logs once a second, answers 400 only to a readable request', async () => {
    let clock = 0;
    const { transport, heard, warnings } = await start({ now: () => clock });
    const peer = await udpPeer();
    const port = transport.localAddress('udp').port;
    const huge = request('SIP/2.0/UDP 10.1.1.1:4540;rport;branch=z9hG4bKhuge')
      .toString()
      .replace('Content-Length: 0', 'Content-Length: 99999999');
    const half = request('SIP/2.0/UDP 10.1.1.1;branch=z9hG4bKhalf').subarray(0, 90);
    for (const bytes of [
      randomBytes(512),
      half,
      Buffer.from(huge),
      Buffer.from('\r\n\r\n'),
      // One byte that is no keep-alive (a random one was CR or LF once in 128 runs: not counted).
      Buffer.from([0xff]),
    ]) {
      await peer.send(bytes, port);
    }
    await waitFor(() => transport.stats.parseErrors === 4);
    const reply = parseMessage(await waitFor(() => peer.received[0])) as SipResponse;
    expect(reply.status).toBe(400);
    expect(header(reply, 'Via')).toBe(
      `SIP/2.0/UDP 10.1.1.1:4540;received=127.0.0.1;rport=${peer.port};branch=z9hG4bKhuge`,
    );
    const parseWarnings = () => warnings.filter((warning) => warning.msg.includes('unparseable'));
    expect(parseWarnings()).toHaveLength(1);
    clock += 1000;
    await peer.send(randomBytes(64), port);
    await waitFor(() => transport.stats.parseErrors === 5);
    expect(parseWarnings()).toHaveLength(2);
    expect(parseWarnings()[1]?.obj).toMatchObject({ transport: 'udp', suppressed: 3 });
    await peer.send(request('SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKok'), port); // still listening
    await waitFor(() => heard[0]);
    await pause(50);
    expect(peer.received).toHaveLength(1);
  });

  it('catches and logs a handler that throws, and goes on', async () => {
    let calls = 0;
    const { transport, warnings } = await start({
      onMessage: () => {
        calls++;
        throw new Error('handler bug');
      },
    });
    const peer = await udpPeer();
    await peer.send(request('SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKa'), transport.localAddress('udp').port);
    await peer.send(request('SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKb'), transport.localAddress('udp').port);
    await waitFor(() => calls === 2);
    expect(warnings.find((warning) => warning.msg.includes('handler threw'))?.obj).toMatchObject({
      error: 'handler bug',
    });
  });

  it('warns when a UDP message exceeds 1300 bytes, and sends it anyway', async () => {
    const { transport, warnings } = await start();
    const peer = await udpPeer();
    const big = asRequest(request('SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKbig', 'MESSAGE'));
    big.body = Buffer.alloc(1400, 'a');
    transport.send(big, { host: LOOPBACK, port: peer.port }, 'udp');
    expect(parseMessage(await waitFor(() => peer.received[0])).body).toEqual(big.body);
    expect(warnings.some((warning) => warning.msg.includes('1300'))).toBe(true);
    const small = asRequest(request('SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKsmall'));
    transport.send(small, { host: LOOPBACK, port: peer.port }, 'udp');
    await waitFor(() => peer.received[1]);
    expect(warnings.filter((warning) => warning.msg.includes('1300'))).toHaveLength(1);
  });
});

/** A plain TCP server standing for a trunk: keeps its connections and what they sent. */
async function tcpPeer() {
  const sockets: net.Socket[] = [];
  const chunks: Buffer[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  const peer = {
    port: (server.address() as net.AddressInfo).port,
    sockets,
    text: () => Buffer.concat(chunks).toString('utf8'),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  open.push(peer);
  return peer;
}

describe('SipTransport over TCP', () => {
  it('reassembles a message cut in pieces and answers over the connection it came on', async () => {
    const { transport, heard } = await start();
    const client = await tcpClient(transport.localAddress('tcp').port);
    // The Via's port is not the socket's: the response must still take the request's connection.
    const bytes = request('SIP/2.0/TCP 127.0.0.1:5999;branch=z9hG4bKcut', 'INVITE');
    for (const [from, to] of [
      [0, 7],
      [7, 150],
      [150, bytes.length],
    ] as const) {
      client.socket.write(bytes.subarray(from, to));
      if (to < bytes.length) {
        await pause(30);
        expect(heard).toHaveLength(0);
      }
    }
    const got = await waitFor(() => heard[0]);
    expect(heard).toHaveLength(1);
    expect(got).toMatchObject({ transport: 'tcp', source: { host: LOOPBACK, port: client.port } });
    expect(serializeMessage(got.message)).toEqual(bytes);
    answer(transport, got, 180);
    await waitFor(() => client.text().includes('SIP/2.0 180 Ringing'));
    expect(transport.stats.connections).toBe(1);
    // A later request to the peer at that address reuses the connection too.
    transport.send(
      asRequest(request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKbye', 'BYE')),
      { host: LOOPBACK, port: 5999 },
      'tcp',
    );
    await waitFor(() => client.text().includes('BYE sip:'));
    expect(transport.stats.connections).toBe(1);
  });

  it('answers a double-CRLF keep-alive ping with a CRLF pong', async () => {
    const { transport, heard } = await start();
    const client = await tcpClient(transport.localAddress('tcp').port);
    client.socket.write('\r\n\r\n');
    await waitFor(() => client.text() === '\r\n');
    client.socket.write(request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKafter'));
    await waitFor(() => heard[0]);
    expect(transport.stats.parseErrors).toBe(0);
  });

  it('opens a connection when none exists, reuses it, and hears the responses on it', async () => {
    const { transport, heard } = await start();
    const trunk = await tcpPeer();
    const destination = { host: LOOPBACK, port: trunk.port };
    const invite = asRequest(
      request(`SIP/2.0/TCP 127.0.0.1:${transport.localAddress('tcp').port};branch=z9hG4bKout`, 'INVITE'),
    );
    transport.send(invite, destination, 'tcp');
    transport.send(asRequest(request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKout2')), destination, 'tcp');
    await waitFor(() => trunk.text().includes('z9hG4bKout2'));
    expect(trunk.sockets).toHaveLength(1);
    const received = trunk.text();
    expect(received.startsWith(serializeMessage(invite).toString())).toBe(true);
    trunk.sockets[0]?.write(serializeMessage(buildResponse(invite, 100)));
    const got = await waitFor(() => heard[0]);
    expect(got).toMatchObject({ transport: 'tcp', source: destination });
    expect(isRequest(got.message)).toBe(false);
    expect(transport.stats).toMatchObject({ sent: 2, received: 1, connections: 1 });
  });

  it('reports a refused connection through onTransportError', async () => {
    const { transport, transportErrors } = await start();
    const closed = await tcpPeer();
    await closed.close(); // its port now refuses
    const destination = { host: LOOPBACK, port: closed.port };
    transport.send(asRequest(request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKnone')), destination, 'tcp');
    const failure = await waitFor(() => transportErrors[0]);
    expect(failure.destination).toEqual(destination);
    expect((failure.error as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    await waitFor(() => transport.stats.connections === 0);
  });

  it('skips a malformed message on a stream, and closes a stream whose framing is broken', async () => {
    const { transport, heard } = await start();
    const port = transport.localAddress('tcp').port;
    const client = await tcpClient(port);
    const badCSeq = request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKbad')
      .toString()
      .replace('CSeq: 1 OPTIONS', 'CSeq: x OPTIONS');
    client.socket.write(badCSeq);
    client.socket.write(request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKgood'));
    await waitFor(() => heard[0]);
    expect(transport.stats.parseErrors).toBe(1);
    expect(client.closed()).toBe(false);

    const noLength = await tcpClient(port);
    noLength.socket.write(
      request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKnolen').toString().replace('Content-Length: 0\r\n', ''),
    );
    await waitFor(() => noLength.closed());
    const huge = await tcpClient(port);
    huge.socket.write(
      request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKhuge')
        .toString()
        .replace('Content-Length: 0', 'Content-Length: 99999999'),
    );
    await waitFor(() => huge.closed());
    const noise = await tcpClient(port);
    noise.socket.write(randomBytes(70_000).map((byte) => (byte === 10 ? 32 : byte)));
    await waitFor(() => noise.closed());
    expect(transport.stats.parseErrors).toBe(4);
    expect(heard).toHaveLength(1);
    await waitFor(() => transport.stats.connections === 1);
  });

  it('refuses connections beyond maxConnections, and closes idle ones', async () => {
    const { transport, warnings } = await start({ maxConnections: 1, idleMs: 300 });
    const port = transport.localAddress('tcp').port;
    const first = await tcpClient(port);
    await waitFor(() => transport.stats.connections === 1);
    const second = await tcpClient(port);
    await waitFor(() => second.closed());
    expect(first.closed()).toBe(false);
    expect(warnings.some((warning) => warning.msg.includes('too many connections'))).toBe(true);
    expect(() =>
      transport.send(
        asRequest(request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKx')),
        { host: LOOPBACK, port: 9 },
        'tcp',
      ),
    ).toThrow(/too many/);
    const openedAt = Date.now();
    await waitFor(() => first.closed(), 3000);
    expect(Date.now() - openedAt).toBeGreaterThanOrEqual(200);
    expect(transport.stats.connections).toBe(0);
  });
});

const SOCKET_KINDS = new Set(['UDPWrap', 'TCPServerWrap', 'TCPSocketWrap', 'TCPWrap']);
const openSockets = () => process.getActiveResourcesInfo().filter((kind) => SOCKET_KINDS.has(kind)).length;

describe('SipTransport.close', () => {
  it('closes its sockets, its connections both ways, and refuses to send after', async () => {
    await waitFor(() => openSockets() === 0); // the earlier tests' sockets finish closing
    const heard: Heard[] = [];
    const transport = await SipTransport.listen({
      host: LOOPBACK,
      port: 0,
      onMessage: (message, source, name) => heard.push({ message, source, transport: name }),
    });
    const port = transport.localAddress('udp').port;
    const client = await tcpClient(port);
    client.socket.write(request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKc'));
    await waitFor(() => heard[0]);
    const trunk = await tcpPeer();
    transport.send(
      asRequest(request('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKo')),
      { host: LOOPBACK, port: trunk.port },
      'tcp',
    );
    await waitFor(() => trunk.sockets.length === 1);
    expect(openSockets()).toBe(7); // UDP, two TCP servers, both ends of two connections
    await transport.close();
    await waitFor(() => client.closed());
    client.close();
    await trunk.close();
    await waitFor(() => openSockets() === 0);
    expect(transport.stats.connections).toBe(0);
    expect(() =>
      transport.send(
        asRequest(request('SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKz')),
        { host: LOOPBACK, port },
        'udp',
      ),
    ).toThrow(/closed/);
    // The port is free again, for UDP and TCP alike.
    const again = await SipTransport.listen({ host: LOOPBACK, port, onMessage: () => {} });
    expect(again.localAddress('udp').port).toBe(port);
    await again.close();
    await transport.close(); // twice is fine
  });
});

/** A self-signed certificate for 127.0.0.1, made by the `openssl` CLI (no test dependency needed). */
function selfSignedCertificate(): { cert: Buffer; key: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'sip-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
        ...['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1'],
        ...['-subj', '/CN=switchboard-test', '-addext', 'subjectAltName=IP:127.0.0.1'],
      ],
      { stdio: 'ignore' },
    );
    return { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('SipTransport over TLS', () => {
  it('carries a request and its response over one verified TLS connection, and refuses an unknown certificate', async () => {
    const { cert, key } = selfSignedCertificate();
    const trunk = await start({ tls: { port: 0, cert, key } });
    const us = await start({ tls: { port: 0, cert, key, ca: cert } });
    const ourTls = us.transport.localAddress('tls');
    expect(ourTls.port).not.toBe(us.transport.localAddress('tcp').port);
    const invite = asRequest(request(`SIP/2.0/TLS 127.0.0.1:${ourTls.port};branch=z9hG4bKtls`, 'INVITE'));
    us.transport.send(invite, trunk.transport.localAddress('tls'), 'tls');
    const got = await waitFor(() => trunk.heard[0]);
    expect(got.transport).toBe('tls');
    expect(serializeMessage(got.message)).toEqual(serializeMessage(invite));
    answer(trunk.transport, got, 200);
    const reply = await waitFor(() => us.heard[0]);
    expect(reply).toMatchObject({ transport: 'tls', source: trunk.transport.localAddress('tls') });
    expect((reply.message as SipResponse).status).toBe(200);
    expect(trunk.transport.stats.connections).toBe(1);
    expect(us.transport.stats.connections).toBe(1);

    // A request from the trunk to our sent-by takes the connection we opened (its alias).
    trunk.transport.send(asRequest(request('SIP/2.0/TLS 127.0.0.1;branch=z9hG4bKbye', 'BYE')), ourTls, 'tls');
    expect(((await waitFor(() => us.heard[1])).message as SipRequest).method).toBe('BYE');
    expect(us.transport.stats.connections).toBe(1);

    // A peer that does not trust our self-signed certificate fails to connect, and says so.
    const stranger = await start({ tls: { port: 0, cert, key } });
    stranger.transport.send(
      asRequest(request('SIP/2.0/TLS 127.0.0.1;branch=z9hG4bKno', 'BYE')),
      ourTls,
      'tls',
    );
    const failure = await waitFor(() => stranger.transportErrors[0]);
    // The code, not the message: Node 24 appends advice to the message.
    expect(failure).toMatchObject({ destination: ourTls, error: { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' } });
    await pause(50);
    expect(us.heard).toHaveLength(2);
  });
});

describe('SipTransport start-up and stalled connections', () => {
  it('fails to listen on a port that is taken, leaving nothing bound', async () => {
    const { transport } = await start();
    const port = transport.localAddress('udp').port;
    await expect(SipTransport.listen({ host: LOOPBACK, port, onMessage: () => {} })).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
    await transport.close();
    const again = await SipTransport.listen({ host: LOOPBACK, port, onMessage: () => {} });
    await again.close();
  });

  it('drops an outbound connection that is not established in time, as a transport error', async () => {
    const { transport, transportErrors } = await start({ connectTimeoutMs: 200 });
    const silent = await tcpPeer(); // accepts TCP but never speaks TLS: the handshake never ends
    const destination = { host: LOOPBACK, port: silent.port };
    const sentAt = Date.now();
    transport.send(asRequest(request('SIP/2.0/TLS 127.0.0.1;branch=z9hG4bKstall')), destination, 'tls');
    const failure = await waitFor(() => transportErrors[0]);
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(150);
    expect(failure).toMatchObject({ destination, error: { message: 'no tls connection within 200 ms' } });
    await waitFor(() => transport.stats.connections === 0);
  });
});
