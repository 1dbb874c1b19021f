/**
 * The UDP ports a call's media takes: an even RTP port and the odd one above it for RTCP (RFC 3550
 * §11), out of the range the operator opened in the firewall. The range is walked from a start that
 * moves on after every allocation, so a port a call just gave back is the last to be taken again (a
 * trunk's late packets for the old call must not land in a new one). Ports held by someone else on
 * the host (EADDRINUSE, on either of the pair) are skipped; other bind failures (a wrong host, no
 * permission) are the operator's to fix and are thrown, and so is a range with no free pair left.
 */
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';

export interface PortRangeOptions {
  /** The lowest port, even, and the highest (the pair `max - 1, max` is used when max is odd). */
  min: number;
  max: number;
  /** The address to bind (default 0.0.0.0: every IPv4 interface). */
  host?: string;
}

export interface MediaPorts {
  rtp: dgram.Socket;
  rtcp: dgram.Socket;
  /** The RTP port; RTCP is on port + 1. */
  port: number;
}

/** Every pair of the range is taken: by our own calls or by other programs on the host. */
export class PortRangeExhaustedError extends Error {
  constructor(
    readonly min: number,
    readonly max: number,
  ) {
    super(`no free RTP/RTCP port pair in ${min}-${max}: every pair is in use`);
    this.name = 'PortRangeExhaustedError';
  }
}

export class PortRange {
  readonly #min: number;
  readonly #pairs: number;
  readonly #host: string;
  /** RTP ports taken by us, allocations under way included (so two at once never try one port). */
  readonly #taken = new Set<number>();
  /** The pair the next walk starts at. */
  #cursor = 0;

  constructor(options: PortRangeOptions) {
    const { min, max } = options;
    if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1024 || max > 65535) {
      throw new RangeError(`an RTP port range is two integers within 1024-65535, not ${min}-${max}`);
    }
    if (min % 2 !== 0) throw new RangeError(`an RTP port range starts at an even port, not ${min}`);
    this.#pairs = Math.floor((max - min + 1) / 2);
    if (this.#pairs < 1) throw new RangeError(`the RTP port range ${min}-${max} holds no pair of ports`);
    this.#min = min;
    this.#host = options.host ?? '0.0.0.0';
  }

  /** Binds the next free pair: RTP on an even port, RTCP on the one above. */
  async allocate(): Promise<MediaPorts> {
    for (let tried = 0; tried < this.#pairs; tried++) {
      const index = (this.#cursor + tried) % this.#pairs;
      const port = this.#min + 2 * index;
      if (this.#taken.has(port)) continue;
      this.#taken.add(port);
      const pair = await this.#bindPair(port).catch((error: unknown) => {
        this.#taken.delete(port);
        throw error;
      });
      if (pair) {
        this.#cursor = (index + 1) % this.#pairs;
        return pair;
      }
      this.#taken.delete(port);
    }
    throw new PortRangeExhaustedError(this.#min, this.#min + 2 * this.#pairs - 1);
  }

  /** Closes the pair's sockets (if still open) and gives its ports back to the range. */
  async release(ports: MediaPorts): Promise<void> {
    await Promise.all([closeQuietly(ports.rtp), closeQuietly(ports.rtcp)]);
    this.#taken.delete(ports.port);
  }

  /** How many pairs our calls hold. */
  get inUse(): number {
    return this.#taken.size;
  }

  /** The pair bound, or null when either port is held by someone else. */
  async #bindPair(port: number): Promise<MediaPorts | null> {
    const rtp = await bind(this.#host, port);
    if (!rtp) return null;
    const rtcp = await bind(this.#host, port + 1).catch(async (error: unknown) => {
      await closeQuietly(rtp);
      throw error;
    });
    if (!rtcp) {
      await closeQuietly(rtp);
      return null;
    }
    return { rtp, rtcp, port };
  }
}

/** A socket bound to `host:port`, or null if the port is in use; other failures throw. */
function bind(host: string, port: number): Promise<dgram.Socket | null> {
  const socket = dgram.createSocket({ type: isIPv6(host) ? 'udp6' : 'udp4' });
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      socket.close();
      if (error.code === 'EADDRINUSE') resolve(null);
      else reject(error);
    };
    socket.once('error', failed);
    socket.bind({ port, address: host, exclusive: true }, () => {
      socket.off('error', failed);
      resolve(socket);
    });
  });
}

/** Closes a socket, whether or not it is already closed. */
function closeQuietly(socket: dgram.Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      socket.close(() => resolve());
    } catch {
      // ERR_SOCKET_DGRAM_NOT_RUNNING: it was closed already.
      resolve();
    }
  });
}
