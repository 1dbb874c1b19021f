/**
 * What other domains may read of phone numbers. Their rows are written only here, in phone-numbers;
 * others read them through these functions — tenant-scoped, except `findNumberOnPlatform`, which
 * says why it is not.
 */
export type { PhoneNumberRow } from './store.js';
export {
  findByNumber,
  findNumberOnPlatform,
  findPhoneNumber,
  firstNumberOfAssistant,
  numbersRoutedTo,
} from './store.js';
