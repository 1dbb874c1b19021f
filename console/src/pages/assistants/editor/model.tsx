/**
 * The model: its vendor (llm_provider), how it is reached (llm_provider_config, its key write-only),
 * how it samples (llm_settings; the prompt and welcome message are in General), and the vendors
 * tried when it fails (llm_fallback_providers, their keys masked in the JSON box).
 */

import { Setting } from './field.js';
import { Every, Group } from './group.js';

export function ModelGroup() {
  return (
    <Group title="Model" id="model">
      <Setting path="llm_provider" label="Model provider" />
      <Every
        object="llm_provider_config"
        labels={{
          api_key: 'Model API key',
          model: 'Model',
          base_url: 'Model base URL',
          custom_config: 'Model custom config',
        }}
      />
      <Every object="llm_settings" skip={['system_prompt', 'welcome_message']} />
      <fieldset class="settings-set">
        <legend>Fallback providers</legend>
        <Setting path="llm_fallback_providers.enabled" label="Fallbacks enabled" />
        <Setting
          path="llm_fallback_providers.fallbacks"
          label="Fallbacks"
          help="A list of { provider, api_key, model, base_url }; a masked api_key sent back keeps the saved one while its provider and base_url stay"
        />
      </fieldset>
    </Group>
  );
}
