/**
 * Hearing (speech to text, stt_settings): the speech model and language, how the end of the caller's
 * turn is found (endpointing, utterance end, VAD), the words to listen for — keyterms for the newest
 * model, keywords for older ones (the API refuses the wrong one) — and the vendor key, write-only.
 */
import { Every, Group } from './group.js';

export function HearingGroup() {
  return (
    <Group title="Hearing" id="hearing">
      <Every
        object="stt_settings"
        labels={{
          model: 'Speech model',
          language: 'Language',
          api_key: 'Speech API key',
          endpointing: 'Endpointing',
        }}
      />
    </Group>
  );
}
