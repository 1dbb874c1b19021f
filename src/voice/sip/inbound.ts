/**
 * Who may call in through a SIP trunk: the admission rule for an inbound INVITE, decided before any
 * call record exists. The dialled number must be on `sip_trunk` with its organization's trunk taking
 * inbound calls; the INVITE must come from the trunk — one of its `inbound_addresses`, or, when none
 * are listed, an address its `sip_domain` resolves to — or prove the trunk's credentials with digest
 * (challenged with a stateless signed nonce). Anything else is refused with one answer, 403, that says
 * nothing about which check failed (the reason goes to the log and metrics only): the platform never
 * answers, and so never relays, a call nobody configured.
 */
import { toE164 } from '../../lib/phone.js';
import { formatChallenge, type NonceIssuer, verifyAuthorization } from '../../sip/digest-server.js';
import type { Peer } from '../../sip/transaction-common.js';
import { addressAllowed, type TrunkSettings } from './trunk-settings.js';

export interface InboundInvite {
  /** The dialled number: the Request-URI's user part. */
  dialled: string;
  source: Peer;
  /** The Request-URI as written (what digest credentials must name). */
  requestUri: string;
  /** The Authorization header, when the caller answered a challenge. */
  authorization?: string;
}

export interface InboundNumber {
  id: number;
  organizationId: number;
  assistantId: number | null;
  graphId: number | null;
  provider: string;
  phoneNumber: string;
}

export interface InboundDeps {
  numberOf(e164: string): Promise<InboundNumber | undefined>;
  trunkOf(organizationId: number, number: InboundNumber): Promise<TrunkSettings | undefined>;
  /** The addresses a host name resolves to (an address resolves to itself). */
  addressesOf(host: string): Promise<string[]>;
  nonces: NonceIssuer;
  realm: string;
}

export type RefusalReason = 'unknown-number' | 'inbound-disabled' | 'not-from-trunk' | 'bad-credentials';

export type Admission =
  | { kind: 'accept'; number: InboundNumber; trunk: TrunkSettings; by: 'address' | 'credentials' }
  | { kind: 'challenge'; header: string }
  | { kind: 'refuse'; status: 403; why: RefusalReason };

export async function admitInvite(invite: InboundInvite, deps: InboundDeps): Promise<Admission> {
  const refuse = (why: RefusalReason): Admission => ({ kind: 'refuse', status: 403, why });
  const dialled = dialledNumber(unescaped(invite.dialled));
  const number = dialled ? await deps.numberOf(dialled) : undefined;
  if (number?.provider !== 'sip_trunk') return refuse('unknown-number');
  const trunk = await deps.trunkOf(number.organizationId, number);
  if (!trunk?.inboundEnabled) return refuse('inbound-disabled');

  const allowed =
    trunk.inboundAddresses.length > 0
      ? trunk.inboundAddresses
      : await deps.addressesOf(trunk.domain).catch(() => [] as string[]);
  if (addressAllowed(invite.source.host, allowed)) return { kind: 'accept', number, trunk, by: 'address' };

  const credentials = trunk.credentials;
  if (!credentials) return refuse('not-from-trunk');
  const challenge = (stale: boolean): Admission => ({
    kind: 'challenge',
    header: formatChallenge({ realm: deps.realm, nonce: deps.nonces.issue(), algorithm: 'MD5', stale }),
  });
  if (!invite.authorization) return challenge(false);
  const verified = verifyAuthorization(invite.authorization, {
    method: 'INVITE',
    realm: deps.realm,
    password: (username) => (username === credentials.username ? credentials.password : undefined),
    // The digest-uri is not compared with the Request-URI: trunks and phones write it in other
    // forms (sipp names the host only). A reply is bounded by the nonce's five minutes instead.
    checkNonce: (nonce) => deps.nonces.check(nonce),
  });
  if (verified.ok) return { kind: 'accept', number, trunk, by: 'credentials' };
  if (verified.reason === 'stale') return challenge(true);
  return refuse('bad-credentials');
}

/** The number a Request-URI's user part names: E.164, with or without its `+` (trunks send both). */
function dialledNumber(user: string): string | undefined {
  const bare = user.split(';')[0] ?? '';
  return toE164(bare) ?? (/^[1-9][0-9]{6,14}$/.test(bare) ? toE164(`+${bare}`) : undefined);
}

/** A URI user part with its %-escapes undone (`%2B1415…`); as written when they are malformed. */
function unescaped(user: string): string {
  try {
    return decodeURIComponent(user);
  } catch {
    return user;
  }
}
