/**
 * An organization's SIP trunk as the SIP agent uses it, read from what `ConfigResolver` gives for
 * `sip_trunk` (the organization's `sip_trunk_config` with its sealed username and password merged in,
 * every value a string: lists arrive comma-joined). One reader, so the agent's outbound dial and its
 * inbound checks agree on defaults: UDP on 5060, TLS on 5061, inbound off unless enabled.
 *
 * Also the rules that map a SIP final response to a call status (RFC 3261 §21): busy for "busy
 * everywhere" answers, no-answer for the ring time-out and "not reachable now", failed (the code kept)
 * for everything else.
 */
import { BlockList, isIP } from 'node:net';
import type { CallStatus } from '../../db/schema/telephony.js';
import type { SipTransportName } from '../../sip/transport-types.js';

export interface TrunkSettings {
  /** The trunk's host: where INVITEs go, and the host of our From and the Request-URI. */
  domain: string;
  port: number;
  transport: SipTransportName;
  /** Digest credentials for the trunk's challenges (and for callers who prove themselves). */
  credentials?: { username: string; password: string };
  inboundEnabled: boolean;
  /** Addresses and CIDR blocks an inbound INVITE may come from without credentials. */
  inboundAddresses: string[];
  register: boolean;
}

const DEFAULT_PORT: Record<SipTransportName, number> = { udp: 5060, tcp: 5060, tls: 5061 };

/** The trunk in `values`, or undefined when it names no `sip_domain`. */
export function trunkSettings(values: Readonly<Record<string, string>>): TrunkSettings | undefined {
  const domain = values.sip_domain?.trim();
  if (!domain) return undefined;
  const transport: SipTransportName =
    values.transport === 'tcp' || values.transport === 'tls' ? values.transport : 'udp';
  const port = Number(values.port);
  const { username, password } = values;
  return {
    domain,
    port: Number.isInteger(port) && port > 0 && port < 65536 ? port : DEFAULT_PORT[transport],
    transport,
    ...(username && password ? { credentials: { username, password } } : {}),
    inboundEnabled: values.inbound_enabled === 'true',
    inboundAddresses: (values.inbound_addresses ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ''),
    register: values.register === 'true' && username !== undefined && password !== undefined,
  };
}

/** The port in a URI to the trunk: none when it is the transport's standard one. */
export function portPart(trunk: TrunkSettings): string {
  return trunk.port === DEFAULT_PORT[trunk.transport] ? '' : `:${trunk.port}`;
}

/** The URI parameter naming a stream transport (UDP is the default and goes unnamed). */
export function transportPart(transport: SipTransportName): string {
  return transport === 'udp' ? '' : `;transport=${transport}`;
}

/**
 * Whether `address` lies in one of `blocks` (addresses or CIDR blocks; IPv4-mapped IPv6 sources
 * compare as IPv4). Entries that are not addresses are ignored: they were refused when saved.
 */
export function addressAllowed(address: string, blocks: readonly string[]): boolean {
  const list = new BlockList();
  for (const block of blocks) {
    const [host = '', prefix] = block.split('/');
    const family = isIP(host);
    if (family === 0) continue;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(host, type);
    else list.addSubnet(host, Number(prefix), type);
  }
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const source = mapped ?? address;
  const family = isIP(source);
  if (family === 0) return false;
  return list.check(source, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Which sources a call leg's RTP may latch onto (RTP bleed, rtp-session.ts): the address its SDP
 * names, or one of `sources` — the signalling peer and the trunk's listed addresses and blocks.
 */
export function mediaSourceRule(
  sdpAddress: string,
  sources: readonly string[],
): (address: string) => boolean {
  return (address) => address === sdpAddress || addressAllowed(address, sources);
}

/**
 * What a SIP final failure makes of an outbound call: `ringTimedOut` when our ring time-out cancelled
 * it, `cancelled` when someone hung it up before the answer.
 */
export function callStatusOfFailure(
  status: number,
  how: { ringTimedOut?: boolean; cancelled?: boolean } = {},
): CallStatus {
  if (how.ringTimedOut) return 'no-answer';
  if (how.cancelled) return 'canceled';
  // Busy here, busy everywhere, declined (a person refused the call: what a phone shows as busy).
  if (status === 486 || status === 600 || status === 603) return 'busy';
  // Temporarily unavailable, the far end's own ring time-out, or it gave up ringing: nobody answered.
  if (status === 480 || status === 408 || status === 487) return 'no-answer';
  return 'failed';
}
