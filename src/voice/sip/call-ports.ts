/**
 * The SIP agent's RTP ports as its calls take them: a pair for each call leg (RTP, and RTCP on the
 * next port) from RTP_PORT_MIN–RTP_PORT_MAX, a refusal callers understand (retryable, 503) when none
 * is left, and our side of the SDP for a pair.
 */
import { ProviderError } from '../../providers/errors.js';
import { type MediaPorts, PortRange, PortRangeExhaustedError } from '../../sip/port-range.js';
import { type LocalSdp, newSessionId } from '../../sip/sdp.js';

export class CallPorts {
  readonly #range: PortRange;

  constructor(private readonly config: { min: number; max: number; host: string; publicHost: string }) {
    this.#range = new PortRange({ min: config.min, max: config.max, host: config.host });
  }

  async allocate(): Promise<MediaPorts> {
    try {
      return await this.#range.allocate();
    } catch (error) {
      if (error instanceof PortRangeExhaustedError)
        throw new ProviderError('Every RTP port is in use (RTP_PORT_MIN–RTP_PORT_MAX)', {
          provider: 'sip_trunk',
          retryable: true,
          status: 503,
        });
      throw error;
    }
  }

  release(ports: MediaPorts): Promise<void> {
    return this.#range.release(ports);
  }

  /** Our side of an offer or answer on these ports, written with the public address. */
  localSdp(ports: MediaPorts): LocalSdp {
    return { address: this.config.publicHost, port: ports.port, sessionId: newSessionId(), version: 1 };
  }
}
