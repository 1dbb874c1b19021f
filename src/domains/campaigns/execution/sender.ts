/**
 * What a campaign's attempts go out with — its assistant, the first number routed to the assistant,
 * and the carrier credentials for that number — or why there is nothing to send with. Looked up
 * once per campaign every few seconds: a dispatch of thousands of contacts asks for every one.
 */
import type { Db } from '../../../db/client.js';
import type { Tenant } from '../../../db/tenant.js';
import { isTelephonyProvider } from '../../../providers/carriers/index.js';
import type { TelephonyProvider } from '../../../providers/ids.js';
import { findAssistant } from '../../assistants/reads.js';
import { detectsVoicemailFor } from '../../calls/answered-by.js';
import type { ConfigResolver } from '../../runtime/resolve-config.js';
import type { CampaignRecord } from './store.js';

export interface Sender {
  assistantId: number;
  assistantName: string;
  numberId: number;
  phoneNumber: string;
  /** A carrier, or `sip_trunk` (calls only: the SIP agent places them through the organization's trunk). */
  provider: TelephonyProvider;
  credentials: Record<string, string>;
  /** Whether the carrier is asked to detect answering machines (the assistant's voicemail settings). */
  detectsVoicemail: boolean;
}

/** Why a campaign sends no SMS from a number on a SIP trunk. */
export function noSmsOnTrunk(phoneNumber: string): string {
  return `The number ${phoneNumber} is on a SIP trunk, which carries no SMS: SMS and mixed campaigns need a carrier number`;
}

/** How long a sender found is used before it is looked up again. */
const SENDER_TTL_MS = 5_000;

export class CampaignSenders {
  readonly #found = new Map<number, { at: number; sender: Sender | { reason: string } }>();

  constructor(private readonly deps: { db: Db; resolver: ConfigResolver }) {}

  /** The campaign's sender, or why there is none. */
  async of(tenant: Tenant, campaign: CampaignRecord): Promise<Sender | { reason: string }> {
    const cached = this.#found.get(campaign.id);
    if (cached && Date.now() - cached.at < SENDER_TTL_MS) return cached.sender;
    const sender = await this.#find(tenant, campaign);
    this.#found.set(campaign.id, { at: Date.now(), sender });
    if (this.#found.size > 1000) this.#found.clear();
    return sender;
  }

  /** Forgets what was found for a campaign (its assistant or numbers may have changed). */
  forget(campaignId: number): void {
    this.#found.delete(campaignId);
  }

  async #find(tenant: Tenant, campaign: CampaignRecord): Promise<Sender | { reason: string }> {
    const { db } = this.deps;
    if (campaign.assistantId === null) return { reason: "The campaign's assistant was deleted" };
    const assistant = await findAssistant(db, tenant, campaign.assistantId);
    if (!assistant) return { reason: "The campaign's assistant was deleted" };
    if (campaign.campaignType === 'sms' && !campaign.smsMessageTemplate)
      return { reason: 'An SMS campaign needs an sms_message_template' };
    const sender = await this.deps.resolver.sender(tenant, { assistantId: assistant.id });
    if (!sender) return { reason: `No phone number is routed to the assistant "${assistant.name}"` };
    const { number, credentials } = sender;
    if (!isTelephonyProvider(number.provider))
      return { reason: `The number ${number.phoneNumber} cannot place calls (${number.provider})` };
    // A mixed campaign's SMS would go from the same number: refused up front, not contact by contact.
    if (number.provider === 'sip_trunk' && campaign.campaignType !== 'call')
      return { reason: noSmsOnTrunk(number.phoneNumber) };
    if (!credentials)
      return { reason: `No ${number.provider} credentials: add them to the organization or the assistant` };
    return {
      assistantId: assistant.id,
      assistantName: assistant.name,
      numberId: number.id,
      phoneNumber: number.phoneNumber,
      provider: number.provider,
      credentials: credentials as Record<string, string>,
      detectsVoicemail: detectsVoicemailFor(assistant.config),
    };
  }
}
