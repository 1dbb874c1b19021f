/**
 * Where a tenant's URLs may send the platform — or a carrier, on the tenant's behalf. One policy for
 * every tenant-supplied URL that something fetches: webhook receivers, MMS media, custom LLM
 * endpoints, tool URLs. Addresses fall in three tiers:
 *
 * - `never`: refused whatever the settings. Link-local addresses (where the cloud metadata services
 *   answer: 169.254.169.254 on AWS, GCP, Azure…, 169.254.170.2 for AWS task credentials, fe80::/10),
 *   metadata addresses outside link-local (AWS fd00:ec2::254, Alibaba 100.100.100.200), and
 *   addresses that are no single host (unspecified — which reaches the local machine —, multicast,
 *   reserved and broadcast). A tenant has no business there, and a request there can hand out the
 *   machine's cloud credentials.
 * - `private`: loopback, RFC 1918, carrier-grade NAT, unique local and the like; refused unless
 *   ALLOW_PRIVATE_TARGETS allows them (a local install pointing webhooks at localhost).
 * - `public`: everything else.
 *
 * IPv6 addresses that carry an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by that
 * address too. The host of a URL is taken as WHATWG URL parses it — the parser every fetch of ours
 * uses —, so `http://2852039166/` and `http://0xa9.254.169.254/` are judged as 169.254.169.254. A host
 * name is resolved and every address it resolves to is judged: one refused address refuses the URL.
 *
 * DNS can answer differently the next time, so a check at save time is a courtesy (an early, clear
 * 422); what protects is the check at the time of the request, whose connection then goes to the
 * address that was checked (`pinnedLookup`).
 */
import { lookup as systemLookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { ValidationFailed, type ValidationIssue } from '../domains/errors.js';

export type AddressTier = 'public' | 'private' | 'never';

type Family = 'ipv4' | 'ipv6';
type Range = [network: string, prefix: number, family: Family];

/** Refused always. */
const NEVER: Range[] = [
  ['0.0.0.0', 8, 'ipv4'], // "this" network: 0.0.0.0 reaches the local machine
  ['169.254.0.0', 16, 'ipv4'], // link-local: cloud metadata (169.254.169.254), task credentials
  ['100.100.100.200', 32, 'ipv4'], // Alibaba Cloud metadata (inside carrier-grade NAT)
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, and 255.255.255.255 broadcast
  ['::', 128, 'ipv6'], // unspecified: reaches the local machine
  ['fe80::', 10, 'ipv6'], // link-local
  ['fd00:ec2::254', 128, 'ipv6'], // AWS metadata over IPv6 (inside unique local)
  ['ff00::', 8, 'ipv6'], // multicast
];

/** Refused unless ALLOW_PRIVATE_TARGETS. */
const PRIVATE: Range[] = [
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT
  ['127.0.0.0', 8, 'ipv4'], // loopback
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['::1', 128, 'ipv6'], // loopback
  ['fc00::', 7, 'ipv6'], // unique local
  ['fec0::', 10, 'ipv6'], // site-local (deprecated, still routed by some)
  ['64:ff9b:1::', 48, 'ipv6'], // local-use NAT64
];

function blockList(ranges: Range[]): BlockList {
  const list = new BlockList();
  for (const [network, prefix, family] of ranges) list.addSubnet(network, prefix, family);
  return list;
}
const never = blockList(NEVER);
const privateRanges = blockList(PRIVATE);

const RANK: Record<AddressTier, number> = { public: 0, private: 1, never: 2 };
const stricter = (a: AddressTier, b: AddressTier) => (RANK[a] >= RANK[b] ? a : b);

/** The eight 16-bit words of a valid IPv6 address (an embedded dotted quad included). */
function ipv6Words(address: string): number[] {
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const words = (part: string) =>
    part === '' ? [] : part.split(':').map((word) => Number.parseInt(word, 16));
  const [head = '', tail] = text.split('::');
  if (tail === undefined) return words(head);
  const front = words(head);
  const back = words(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

const dottedQuad = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;

/** The IPv4 address an IPv6 address carries to an IPv4 host, if it carries one. */
function embeddedIPv4(address: string): string | undefined {
  const w = ipv6Words(address);
  const zeros = (from: number, to: number) => w.slice(from, to).every((word) => word === 0);
  if (zeros(0, 5) && w[5] === 0xffff) return dottedQuad(w[6]!, w[7]!); // ::ffff:a.b.c.d, mapped
  // ::a.b.c.d, compatible (deprecated); not :: and ::1, which are addresses of their own.
  if (zeros(0, 6) && w[6]! >> 8 !== 0) return dottedQuad(w[6]!, w[7]!);
  if (w[0] === 0x64 && w[1] === 0xff9b && zeros(2, 6)) return dottedQuad(w[6]!, w[7]!); // NAT64
  if (w[0] === 0x2002) return dottedQuad(w[1]!, w[2]!); // 6to4
  return undefined;
}

/** The tier of an IP address; anything that is not one is `public` (names are resolved first). */
export function addressTier(address: string): AddressTier {
  const bare = address.replace(/^\[|\]$/g, '').split('%')[0] ?? '';
  const family = isIP(bare);
  if (family === 0) return 'public';
  const type: Family = family === 4 ? 'ipv4' : 'ipv6';
  let tier: AddressTier = never.check(bare, type)
    ? 'never'
    : privateRanges.check(bare, type)
      ? 'private'
      : 'public';
  if (family === 6) {
    const carried = embeddedIPv4(bare);
    if (carried) tier = stricter(tier, addressTier(carried));
  }
  return tier;
}

/** `localhost` and the names under it are loopback by definition (RFC 6761), whatever DNS says. */
function isLoopbackName(host: string): boolean {
  return /(^|\.)localhost\.?$/i.test(host);
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses (the system resolver by default; tests inject one). */
export type HostLookup = (hostname: string) => Promise<ResolvedAddress[]>;

const resolveWithSystem: HostLookup = (hostname) => systemLookup(hostname, { all: true, verbatim: true });

export type TargetVerdict =
  | { ok: true; target: ResolvedAddress }
  /**
   * `refused`: the policy refuses the URL (it will not change by trying again); otherwise it could
   * not be judged (the name did not resolve).
   */
  | { ok: false; refused: boolean; reason: string };

/** A tenant-supplied URL and where it sits in the request, for a 422's `loc`. */
export interface TargetField {
  loc: Array<string | number>;
  url: string;
}

export interface OutboundTargetOptions {
  /** ALLOW_PRIVATE_TARGETS: the `private` tier is allowed too. */
  allowPrivate: boolean;
  lookup?: HostLookup;
  /** A name that does not resolve within this long counts as unresolved (default 5 s). */
  lookupTimeoutMs?: number;
}

export class OutboundTargets {
  readonly allowPrivate: boolean;
  readonly #lookup: HostLookup;
  readonly #lookupTimeoutMs: number;

  constructor(options: OutboundTargetOptions) {
    this.allowPrivate = options.allowPrivate;
    this.#lookup = options.lookup ?? resolveWithSystem;
    this.#lookupTimeoutMs = options.lookupTimeoutMs ?? 5000;
  }

  /** Why an address may not be a target (`host` is how the URL named it), or undefined. */
  refusalOf(address: string, host = address): string | undefined {
    const tier = addressTier(address);
    const what = host === address ? address : `${host} resolves to ${address}, which`;
    if (tier === 'never')
      return `${what} is a link-local, cloud metadata or otherwise reserved address: no outbound request may go there`;
    if (tier === 'private' && !this.allowPrivate)
      return `${what} is a loopback or private address, refused while ALLOW_PRIVATE_TARGETS is false`;
    return undefined;
  }

  /**
   * Judges `url`: its host's addresses (resolved when it is a name), every one of them. When the URL
   * may be fetched, `target` is the address to connect to — pass it to `pinnedLookup`.
   */
  async check(url: string | URL): Promise<TargetVerdict> {
    let parsed: URL;
    try {
      parsed = typeof url === 'string' ? new URL(url) : url;
    } catch {
      return { ok: false, refused: true, reason: 'Not a valid URL' };
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      return { ok: false, refused: true, reason: 'Only http and https URLs' };
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    const family = isIP(host);
    if (family !== 0) {
      const reason = this.refusalOf(host);
      return reason ? { ok: false, refused: true, reason } : { ok: true, target: { address: host, family } };
    }
    if (isLoopbackName(host) && !this.allowPrivate) {
      return {
        ok: false,
        refused: true,
        reason: `${host} is a loopback name, refused while ALLOW_PRIVATE_TARGETS is false`,
      };
    }
    let addresses: ResolvedAddress[];
    try {
      addresses = await this.#resolve(host);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      return { ok: false, refused: false, reason: `Could not resolve ${host}: ${code}` };
    }
    for (const { address } of addresses) {
      const reason = this.refusalOf(address, host);
      if (reason) return { ok: false, refused: true, reason };
    }
    const first = addresses[0];
    if (!first) return { ok: false, refused: false, reason: `Could not resolve ${host}` };
    return { ok: true, target: first };
  }

  /**
   * Refuses (422, or `status`) the fields whose URL the policy refuses, all of them at once. A name
   * that does not resolve now is accepted: the check when it is fetched decides.
   */
  async assertAllowed(fields: TargetField[], options: { status?: 400 | 422 } = {}): Promise<void> {
    const verdicts = await Promise.all(fields.map((field) => this.check(field.url)));
    const issues: ValidationIssue[] = [];
    verdicts.forEach((verdict, index) => {
      if (!verdict.ok && verdict.refused)
        issues.push({ loc: fields[index]!.loc, msg: `Refused: ${verdict.reason}`, type: 'value_error' });
    });
    if (issues.length > 0) throw new ValidationFailed(issues, options.status);
  }

  async #resolve(host: string): Promise<ResolvedAddress[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('lookup timed out')), this.#lookupTimeoutMs);
    });
    try {
      return await Promise.race([this.#lookup(host), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * A URL as WHATWG URL reads it — the reading the policy judges —, for handing to a party that fetches
 * it with a parser of its own (a carrier fetching media): `http://0xa9.254.169.254/` and odd escapes
 * then mean to it what they meant to the check. One that does not parse stays as given (and `check`
 * refuses it).
 */
export function canonicalUrl(url: string): string {
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
}

/** A `lookup` for http(s).request that answers only the address that was checked. */
export function pinnedLookup(target: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}
