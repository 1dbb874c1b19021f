/**
 * Around the call: answering machines (voicemail_settings), recording, the assistant's own carrier
 * accounts (their tokens write-only), and custom_settings (the structured data drawn from each call).
 */
import { Every, Group } from './group.js';

export function VoicemailGroup() {
  return (
    <Group title="Voicemail" id="voicemail">
      <Every
        object="voicemail_settings"
        labels={{
          detection: 'Voicemail detection',
          action: 'Voicemail action',
          message: 'Voicemail message',
        }}
      />
    </Group>
  );
}

export function RecordingGroup() {
  return (
    <Group title="Recording" id="recording">
      <Every object="recording_settings" labels={{ enabled: 'Record calls' }} />
    </Group>
  );
}

export function CarriersGroup() {
  return (
    <Group
      title="Carrier accounts"
      id="carriers"
      intro="Only when this assistant uses its own carrier accounts instead of the organization's."
    >
      <fieldset class="settings-set">
        <legend>carrier_a</legend>
        <Every object="carrier_a_config" prefix="carrier_a " />
      </fieldset>
      <fieldset class="settings-set">
        <legend>carrier_b</legend>
        <Every object="carrier_b_config" prefix="carrier_b " />
      </fieldset>
    </Group>
  );
}

export function CustomGroup() {
  return (
    <Group title="Structured data" id="custom">
      <Every object="custom_settings" />
    </Group>
  );
}
