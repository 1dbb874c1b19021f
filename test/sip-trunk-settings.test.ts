/**
 * The SIP trunk as the agent reads it (defaults per transport, inbound off unless enabled, lists
 * arriving comma-joined), the inbound address check (addresses, CIDR blocks, IPv4-mapped sources),
 * and the call status each SIP failure ends in.
 */
import { describe, expect, it } from 'vitest';
import { addressAllowed, callStatusOfFailure, trunkSettings } from '../src/voice/sip/trunk-settings.js';

describe('a trunk read from its stored settings', () => {
  it('is none without a sip_domain', () => {
    expect(trunkSettings({})).toBeUndefined();
    expect(trunkSettings({ sip_domain: '  ', username: 'u' })).toBeUndefined();
  });

  it('defaults to UDP on 5060, TLS to 5061, with inbound calls and registration off', () => {
    expect(trunkSettings({ sip_domain: 'trunk.example.com' })).toEqual({
      domain: 'trunk.example.com',
      port: 5060,
      transport: 'udp',
      inboundEnabled: false,
      inboundAddresses: [],
      register: false,
    });
    expect(trunkSettings({ sip_domain: 't.example.com', transport: 'tls' })).toMatchObject({ port: 5061 });
    expect(trunkSettings({ sip_domain: 't.example.com', transport: 'tcp', port: '5080' })).toMatchObject({
      port: 5080,
      transport: 'tcp',
    });
  });

  it('reads credentials, the inbound flag, comma-joined addresses, and registers only with credentials', () => {
    const trunk = trunkSettings({
      sip_domain: 'trunk.example.com',
      inbound_enabled: 'true',
      inbound_addresses: '192.0.2.10,198.51.100.0/24',
      register: 'true',
      username: 'sb',
      password: 'secret',
    });
    expect(trunk).toMatchObject({
      credentials: { username: 'sb', password: 'secret' },
      inboundEnabled: true,
      inboundAddresses: ['192.0.2.10', '198.51.100.0/24'],
      register: true,
    });
    expect(trunkSettings({ sip_domain: 'x.example.com', register: 'true' })?.register).toBe(false);
    expect(trunkSettings({ sip_domain: 'x.example.com', port: '99999' })?.port).toBe(5060);
  });
});

describe('an inbound source', () => {
  const blocks = ['192.0.2.10', '198.51.100.0/24', '2001:db8::/32'];

  it('is allowed from a listed address or inside a listed block', () => {
    expect(addressAllowed('192.0.2.10', blocks)).toBe(true);
    expect(addressAllowed('198.51.100.77', blocks)).toBe(true);
    expect(addressAllowed('2001:db8:1::5', blocks)).toBe(true);
    expect(addressAllowed('::ffff:198.51.100.3', blocks)).toBe(true);
  });

  it('is refused from anywhere else, and from nowhere when nothing is listed', () => {
    expect(addressAllowed('192.0.2.11', blocks)).toBe(false);
    expect(addressAllowed('198.51.101.1', blocks)).toBe(false);
    expect(addressAllowed('2001:db9::1', blocks)).toBe(false);
    expect(addressAllowed('127.0.0.1', [])).toBe(false);
    expect(addressAllowed('not an address', blocks)).toBe(false);
    expect(addressAllowed('192.0.2.10', ['not a block', 'also/bad'])).toBe(false);
  });
});

describe('a SIP failure ends the call', () => {
  it('busy for busy and declined, no-answer for nobody answering, failed otherwise', () => {
    expect([486, 600, 603].map((code) => callStatusOfFailure(code))).toEqual(['busy', 'busy', 'busy']);
    expect([480, 408, 487].map((code) => callStatusOfFailure(code))).toEqual([
      'no-answer',
      'no-answer',
      'no-answer',
    ]);
    expect([403, 404, 488, 500, 503].map((code) => callStatusOfFailure(code))).toEqual(
      Array(5).fill('failed'),
    );
  });

  it('no-answer when our ring time-out cancelled it, canceled when it was hung up before the answer', () => {
    expect(callStatusOfFailure(487, { ringTimedOut: true })).toBe('no-answer');
    expect(callStatusOfFailure(487, { cancelled: true })).toBe('canceled');
  });
});
