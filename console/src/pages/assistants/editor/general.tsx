/**
 * General: who the assistant is (name, description, active), what it is told and says first (the
 * system prompt and welcome message, kept in llm_settings), the messages around ending and
 * transferring a call, and where its events go (webhooks, the messaging service).
 */
import { Setting } from './field.js';
import { Group } from './group.js';

export function GeneralGroup() {
  return (
    <Group title="General" id="general">
      <Setting path="name" label="Name" />
      <Setting path="description" label="Description" />
      <Setting path="is_active" label="Active" />
      <Setting path="llm_settings.system_prompt" label="System prompt" long />
      <Setting path="llm_settings.welcome_message" label="Welcome message" long />
      <Setting path="end_call_message" label="End call message" />
      <Setting path="transfer_call_message" label="Transfer call message" />
      <Setting path="webhook_url" label="Webhook URL" />
      <Setting path="sms_webhook_url" label="SMS webhook URL" />
      <Setting path="messaging_service_sid" label="Messaging service SID" />
    </Group>
  );
}
