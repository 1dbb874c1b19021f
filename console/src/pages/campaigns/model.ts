/**
 * What the campaigns pages share: the API's campaign types, the statuses and what each allows (so
 * buttons are enabled only when the API would accept them), and the templates a campaign carries.
 */
import type { components } from '../../../../clients/typescript/src/index.js';

export type Campaign = components['schemas']['Campaign'];
export type CampaignStatus = Campaign['status'];
export type CampaignType = Campaign['campaign_type'];

export const TYPES: Array<{ value: CampaignType; label: string }> = [
  { value: 'call', label: 'Calls' },
  { value: 'sms', label: 'SMS' },
  { value: 'mixed', label: 'Calls and SMS' },
];

export function typeLabel(type: string): string {
  return TYPES.find((t) => t.value === type)?.label ?? type;
}

/** The templates, in the order a call uses them; the SMS one is the whole message. */
export const TEMPLATES = [
  { field: 'welcome_message_template', label: 'Welcome message', forType: ['call', 'mixed'] },
  { field: 'agenda_template', label: 'Agenda', forType: ['call', 'mixed'] },
  { field: 'end_call_message_template', label: 'End of call message', forType: ['call', 'mixed'] },
  { field: 'sms_message_template', label: 'SMS message', forType: ['sms', 'mixed'] },
] as const;
export type TemplateField = (typeof TEMPLATES)[number]['field'];

/** Statuses from which each move is allowed (the service's transitions; the API's 409 otherwise). */
export const MOVES = {
  start: ['draft', 'scheduled', 'paused'],
  pause: ['running'],
  stop: ['draft', 'scheduled', 'running', 'paused'],
} satisfies Record<string, CampaignStatus[]>;
export type Move = keyof typeof MOVES;

export function canMove(move: Move, status: CampaignStatus): boolean {
  return (MOVES[move] as CampaignStatus[]).includes(status);
}
