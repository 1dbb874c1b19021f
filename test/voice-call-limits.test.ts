/**
 * Concurrency limits in live calls, end to end (docs/voice.md "Keys and fallbacks"): the
 * organization's per-provider `concurrency_settings` and fallback keys' `concurrent_limit` hold
 * across calls — a second call at the same time moves to the next key, a call for which every key of
 * a vendor is taken hears an apology and ends with its reason recorded — and keys are given back when
 * calls end. Leases held "by another process" are taken directly through a second lease service on
 * the same database, as another process of the cluster would.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vendorLeases } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { VendorLeases } from '../src/domains/leases/service.js';
import { MULAW_8K } from '../src/voice/audio.js';
import { busyApologyClip } from '../src/voice/busy-apology.js';
import { seedCall } from './support/call-seed.js';
import { expectStatus } from './support/factories.js';
import { waitFor } from './support/harness.js';
import { afterGreeting, type CallOutcome, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import type { RigOrganization } from './support/voice-rig-vendors.js';

let rig: VoiceRig;
/** Another process's lease service on the platform's database. */
let elsewhere: VendorLeases;

beforeAll(async () => {
  rig = await startVoiceRig();
  elsewhere = new VendorLeases({ db: rig.t.database.db });
}, 60_000);
afterAll(async () => {
  await rig.close();
});

const GREETING = { llm_settings: { welcome_message: 'Hello, you are through.' } };

async function setConcurrency(org: RigOrganization, settings: Record<string, unknown>): Promise<void> {
  const put = await rig.t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization/concurrency-settings',
    headers: org.admin.headers,
    payload: settings,
  });
  expectStatus(put, 200);
}

/** A fallback key the tts_a simulator accepts; its id. */
async function spareVoiceKey(org: RigOrganization, name: string, limit: number): Promise<number> {
  const apiKey = `tts-${name}-${org.assistantId}`;
  rig.tts.addKey(apiKey);
  const posted = await rig.t.app.inject({
    method: 'POST',
    url: '/api/v1/organization/fallback-keys/tts_a',
    headers: org.admin.headers,
    payload: { name, api_key: apiKey, enabled: true, concurrent_limit: limit },
  });
  expectStatus(posted, 201);
  return (posted.json() as { id: number }).id;
}

/** Takes a key of the organization for a call of "another process", as that process would. */
async function holdElsewhere(org: RigOrganization, kind: 'stt' | 'tts', keyRef: string) {
  const tenant = new Tenant(await organizationIdOf(org));
  const other = await seedCall(rig.t.database, tenant.organizationId, { status: 'in-progress' });
  const provider = kind === 'tts' ? 'tts_a' : 'stt_a';
  expect(await elsewhere.acquire(tenant, other.id, { kind, provider, keyRef }, 1)).toBe(true);
}

async function organizationIdOf(org: RigOrganization): Promise<number> {
  const response = await rig.t.app.inject({
    method: 'GET',
    url: '/api/v1/organization',
    headers: org.admin.headers,
  });
  expectStatus(response, 200);
  return (response.json() as { id: number }).id;
}

async function leasesOf(org: RigOrganization) {
  return rig.t.database.db
    .select({
      callId: vendorLeases.callId,
      kind: vendorLeases.kind,
      provider: vendorLeases.provider,
      keyRef: vendorLeases.keyRef,
    })
    .from(vendorLeases)
    .where(eq(vendorLeases.organizationId, await organizationIdOf(org)));
}

const eventsOf = (outcome: CallOutcome, type: string) =>
  outcome.events.filter((event) => event.type === type).map((event) => event.data);

describe('a key at its limit', () => {
  it('moves a second call at the same time to the next key, and every key is given back when the calls end', async () => {
    let spareId = 0;
    let ready!: (org: RigOrganization) => void;
    const organization = new Promise<RigOrganization>((resolve) => {
      ready = resolve;
    });
    let firstGreeted!: () => void;
    const greeted = new Promise<void>((resolve) => {
      firstGreeted = resolve;
    });
    let secondDone!: () => void;
    const released = new Promise<void>((resolve) => {
      secondDone = resolve;
    });
    const first = rig.call({
      heard: [],
      assistant: GREETING,
      prepare: async (org) => {
        await setConcurrency(org, { tts: { tts_a: { enabled: true, concurrent_limit: 1 } } });
        spareId = await spareVoiceKey(org, 'spare', 1);
        ready(org);
      },
      script: async (phone) => {
        await afterGreeting(phone);
        firstGreeted();
        // The first call stays up until the second has been served.
        await released;
      },
    });
    const org = await organization;
    await greeted;
    let during: Awaited<ReturnType<typeof leasesOf>> = [];
    const second = rig
      .call({
        organization: org,
        heard: [],
        script: async (phone) => {
          await afterGreeting(phone);
          during = await leasesOf(org);
        },
      })
      .finally(secondDone);
    const [a, b] = await Promise.all([first, second]);

    // While both were up, the first held the organization's key and the second the spare one.
    expect(during.sort((x, y) => x.callId - y.callId)).toEqual([
      { callId: a.callId, kind: 'tts', provider: 'tts_a', keyRef: 'organization' },
      { callId: b.callId, kind: 'tts', provider: 'tts_a', keyRef: `fallback:${spareId}` },
    ]);
    expect(eventsOf(a, 'call.vendor_skipped')).toEqual([]);
    expect(eventsOf(b, 'call.vendor_skipped')).toEqual([
      { reasons: ['tts: tts_a organization key is at its concurrent_limit (1)'] },
    ]);
    // Both were greeted in a voice.
    for (const outcome of [a, b]) {
      expect(outcome.turns.map((turn) => turn.kind)).toEqual(['greeting']);
      expect(outcome.phone.heardSegments.length).toBeGreaterThan(0);
      expect(eventsOf(outcome, 'call.voice_unavailable')).toEqual([]);
    }
    await waitFor(async () => ((await leasesOf(org)).length === 0 ? true : undefined), 10_000);
  }, 90_000);

  it('is not enforced when the organization switched its limit off, nor for an assistant’s own key', async () => {
    const outcome = await rig.call({
      heard: [],
      assistant: { ...GREETING, stt_settings: { api_key: 'stt-own-key' } },
      prepare: async (org) => {
        rig.stt.addKey('stt-own-key');
        await setConcurrency(org, {
          tts: { tts_a: { enabled: false, concurrent_limit: 1 } },
          stt: { stt_a: { enabled: true, concurrent_limit: 1 } },
        });
        // Both of the organization's keys are already in use elsewhere.
        await holdElsewhere(org, 'tts', 'organization');
        await holdElsewhere(org, 'stt', 'organization');
      },
      script: afterGreeting,
    });
    expect(eventsOf(outcome, 'call.vendor_skipped')).toEqual([]);
    expect(eventsOf(outcome, 'call.voice_unavailable')).toEqual([]);
    expect(outcome.turns.map((turn) => turn.kind)).toEqual(['greeting']);
    // It held no key of its own: neither is limited for it.
    expect((await leasesOf(outcome.org)).filter((lease) => lease.callId === outcome.callId)).toEqual([]);
  }, 60_000);
});

describe('failover during a call', () => {
  it('takes a limited key only when it reaches it, and passes over one that is full', async () => {
    let freeId = 0;
    let organization: RigOrganization | undefined;
    let during: Awaited<ReturnType<typeof leasesOf>> = [];
    const outcome = await rig.call({
      heard: [],
      assistant: GREETING,
      prepare: async (org, keys) => {
        organization = org;
        const fullId = await spareVoiceKey(org, 'full', 1);
        freeId = await spareVoiceKey(org, 'free', 1);
        await holdElsewhere(org, 'tts', `fallback:${fullId}`);
        // The organization's own key (no limit) is refused when the greeting is asked for.
        rig.tts.failNext(keys.tts, { status: 503 });
      },
      script: async (phone) => {
        await afterGreeting(phone);
        during = await leasesOf(organization!);
      },
    });
    const fallbacks = eventsOf(outcome, 'call.vendor_fallback');
    expect(fallbacks).toEqual([
      expect.objectContaining({
        kind: 'tts',
        key: 'organization key',
        status: 503,
        next: { provider: 'tts_a', key: 'fallback key full' },
      }),
      expect.objectContaining({
        kind: 'tts',
        key: 'fallback key full',
        error: 'fallback key full is at its concurrent_limit',
        next: { provider: 'tts_a', key: 'fallback key free' },
      }),
    ]);
    expect(outcome.turns.map((turn) => turn.kind)).toEqual(['greeting']);
    expect(outcome.phone.heardSegments.length).toBeGreaterThan(0);
    expect(during.filter((lease) => lease.callId === outcome.callId)).toEqual([
      { callId: outcome.callId, kind: 'tts', provider: 'tts_a', keyRef: `fallback:${freeId}` },
    ]);
    await waitFor(
      async () =>
        (await leasesOf(outcome.org)).every((lease) => lease.callId !== outcome.callId) ? true : undefined,
      10_000,
    );
  }, 60_000);
});

describe('every key at its limit', () => {
  it('plays the recorded apology when the voice is what ran out, records why, and ends the call', async () => {
    let connectionsBefore = 0;
    const outcome = await rig.call({
      heard: [],
      assistant: GREETING,
      prepare: async (org) => {
        await setConcurrency(org, { tts: { tts_a: { enabled: true, concurrent_limit: 1 } } });
        const spare = await spareVoiceKey(org, 'busy-spare', 1);
        await holdElsewhere(org, 'tts', 'organization');
        await holdElsewhere(org, 'tts', `fallback:${spare}`);
        connectionsBefore = rig.tts.connections.length;
      },
      script: (phone) => phone.waitForClose({ timeoutMs: 20_000 }).then(() => {}),
    });
    expect(eventsOf(outcome, 'call.voice_unavailable')).toEqual([
      { reason: 'tts: every key at its concurrent_limit' },
    ]);
    expect(outcome.phoneCall.endedBy).toBe('platform');
    expect(outcome.status).toBe('completed');
    expect(outcome.turns).toEqual([]);
    // The caller heard the whole recording (μ-law 8 kHz here), and no voice was asked for anything.
    const clip = busyApologyClip(MULAW_8K);
    expect(outcome.phone.playedBytes).toBeGreaterThanOrEqual(clip.length * 0.95);
    expect(outcome.phone.heardSegments.length).toBeGreaterThan(0);
    expect(rig.tts.connections.length).toBe(connectionsBefore);
    // Its own call holds nothing; the other process's two leases still count.
    const left = await leasesOf(outcome.org);
    expect(left.filter((lease) => lease.callId === outcome.callId)).toEqual([]);
    expect(left).toHaveLength(2);
  }, 60_000);

  it('says the apology in the assistant’s voice when another vendor ran out, and gives the voice back', async () => {
    let connectionsBefore = 0;
    const outcome = await rig.call({
      heard: [],
      assistant: GREETING,
      prepare: async (org) => {
        await setConcurrency(org, {
          tts: { tts_a: { enabled: true, concurrent_limit: 5 } },
          stt: { stt_a: { enabled: true, concurrent_limit: 1 } },
        });
        await holdElsewhere(org, 'stt', 'organization');
        connectionsBefore = rig.tts.connections.length;
      },
      script: (phone) => phone.waitForClose({ timeoutMs: 20_000 }).then(() => {}),
    });
    expect(eventsOf(outcome, 'call.voice_unavailable')).toEqual([
      { reason: 'stt: every key at its concurrent_limit' },
    ]);
    expect(outcome.phoneCall.endedBy).toBe('platform');
    expect(outcome.turns).toEqual([]);
    const spoken = rig.tts.connections.slice(connectionsBefore).flatMap((connection) => connection.texts);
    expect(spoken.join('')).toContain('all of our lines are busy right now');
    expect(outcome.phone.playedBytes).toBeGreaterThan(0);
    await waitFor(
      async () =>
        (await leasesOf(outcome.org)).every((lease) => lease.callId !== outcome.callId) ? true : undefined,
      10_000,
    );
  }, 60_000);
});
