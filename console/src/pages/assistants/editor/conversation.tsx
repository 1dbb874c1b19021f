/**
 * The flow of a conversation: when the caller may interrupt (interruption_settings), and what the
 * assistant does when the caller goes quiet (idle_message, how often, after how long).
 */
import { Setting } from './field.js';
import { Every, Group } from './group.js';

export function InterruptionsGroup() {
  return (
    <Group title="Interruptions" id="interruptions">
      <Every object="interruption_settings" />
    </Group>
  );
}

export function IdleGroup() {
  return (
    <Group title="Idle" id="idle">
      <Setting path="idle_message" label="Idle message" />
      <Setting path="max_idle_messages" label="Max idle messages" />
      <Setting path="idle_timeout" label="Idle timeout" />
    </Group>
  );
}
