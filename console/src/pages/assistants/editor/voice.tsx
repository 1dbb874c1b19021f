/**
 * The voice (text to speech, tts_settings): its vendor and voice, and tts_a's extra knobs, which the
 * API refuses for other vendors — so they show only while tts_a is chosen. Changing the vendor asks
 * for its key again (the saved one belonged to the previous vendor), and drops tts_a's knobs.
 */
import { valueAt, withValue } from './draft.js';
import { useEditor } from './field.js';
import { Every, Group } from './group.js';

const TTS_A_ONLY = ['stability', 'similarity_boost', 'style', 'use_speaker_boost'];

/** What a save sends for the voice: tts_a's knobs left out (they are hidden) once another vendor is chosen. */
export function withVoiceKnobsOfProvider<T>(value: T): T {
  if ((valueAt(value, 'tts_settings.provider') ?? 'tts_a') === 'tts_a') return value;
  return TTS_A_ONLY.reduce((result, knob) => withValue(result, `tts_settings.${knob}`, undefined), value);
}

export function VoiceGroup() {
  const { draft } = useEditor();
  const tts_a = (draft.get('tts_settings.provider') ?? 'tts_a') === 'tts_a';
  return (
    <Group title="Voice" id="voice">
      <Every
        object="tts_settings"
        skip={tts_a ? [] : TTS_A_ONLY}
        labels={{
          provider: 'Voice provider',
          voice_id: 'Voice ID',
          model_id: 'Voice model ID',
          api_key: 'Voice API key',
          provider_config: 'Voice provider config',
        }}
      />
    </Group>
  );
}
