/**
 * Starts the platform's SIP agent (when `SIP_ENABLED`) on the platform's own pieces: the number
 * lookup and trunk settings of the calls' organizations, `CallService` for records and statuses, the
 * voice runtime for the talking; the organizations with a trunk for its upkeep (pings, registrations).
 * Settles the calls its previous life left (`calls/sip-orphans.ts`), then binds the `sip_trunk`
 * adapter to it, so that services reach it.
 */
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { Registry } from 'prom-client';
import type { Config } from '../../config.js';
import type { Db } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import type { CallService } from '../../domains/calls/service.js';
import { settleOrphanedSipCalls } from '../../domains/calls/sip-orphans.js';
import { organizationsWithTrunkOnPlatform } from '../../domains/organizations/reads.js';
import { findNumberOnPlatform } from '../../domains/phone-numbers/reads.js';
import type { ConfigResolver } from '../../domains/runtime/resolve-config.js';
import type { Carriers } from '../../providers/carriers/index.js';
import { SipAgent } from './agent.js';
import { agentAddress, reportingAs } from './holder.js';
import { SipMetrics } from './metrics.js';
import { trunkSettings } from './trunk-settings.js';
import type { SipRuntime } from './types.js';

export interface SipStartDeps {
  config: Config;
  secretKey: string;
  db: Db;
  calls: CallService;
  resolver: ConfigResolver;
  runtime: SipRuntime;
  carriers: Carriers;
  registry: Registry;
  log: SipAgentLog;
}

type SipAgentLog = {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
};

/** The addresses `host` resolves to (an address is its own). */
export async function addressesOf(host: string): Promise<string[]> {
  if (isIP(host)) return [host];
  const found = await lookup(host, { all: true });
  return found.map((entry) => entry.address);
}

export async function startSipAgent(deps: SipStartDeps): Promise<SipAgent> {
  const { config, db, resolver } = deps;
  const sip = config.sip;
  /** An organization's trunk as the agent reads it (the assistant's own settings first, where given). */
  const trunkOf = async (organizationId: number, assistantId?: number | null) => {
    const { credentials } = await resolver.telephonyCredentials(new Tenant(organizationId), {
      provider: 'sip_trunk',
      ...(assistantId === undefined ? {} : { assistantId }),
    });
    return credentials ? trunkSettings(credentials) : undefined;
  };
  const tls = sip.tls && { cert: readFileSync(sip.tls.certFile), key: readFileSync(sip.tls.keyFile) };
  // Known once it listens (the port may be 0: any free one), before any call reaches it.
  let address: string | undefined;
  const agent = await SipAgent.start(
    {
      config: sip,
      secret: Buffer.from(`sip-nonce:${deps.secretKey}`),
      runtime: deps.runtime,
      calls: reportingAs(deps.calls, () => address),
      tenantOf: (organizationId) => new Tenant(organizationId),
      inbound: {
        async numberOf(e164) {
          const number = await findNumberOnPlatform(db, e164);
          if (!number) return undefined;
          // A graph-routed number is answered by the graph's entry assistant.
          const assistantId = await resolver.assistantForNumber(new Tenant(number.organizationId), number);
          return { ...number, assistantId };
        },
        trunkOf: (organizationId, number) => trunkOf(organizationId, number.assistantId),
        addressesOf,
      },
      trunks: {
        organizations: () => organizationsWithTrunkOnPlatform(db),
        trunkOf: (organizationId) => trunkOf(organizationId),
        intervalMs: sip.trunkCheckIntervalSeconds * 1000,
      },
      metrics: new SipMetrics(deps.registry),
      log: deps.log,
    },
    tls,
  );
  address = agentAddress(sip.publicHost, agent.address.port);
  await settleOrphans(deps, agent, address);
  deps.carriers.sip_trunk.bind(agent);
  return agent;
}

/**
 * The calls this agent's previous life held when its process stopped without ending them: settled
 * before services may dial through it (a call it takes meanwhile is its own, and kept). A failure is
 * logged: the agent runs all the same, and its next start settles them.
 */
async function settleOrphans(deps: SipStartDeps, agent: SipAgent, address: string): Promise<void> {
  try {
    const held = async (callSid: string) => (await agent.lookupCall(callSid)) !== undefined;
    const settled = await settleOrphanedSipCalls({ db: deps.db, calls: deps.calls }, address, held);
    if (settled > 0) deps.log.warn({ sip: address, settled }, 'SIP calls left by a stopped process settled');
  } catch (error) {
    deps.log.warn({ err: error, sip: address }, 'settling the SIP calls of a stopped process failed');
  }
}
