/**
 * What the operator's `switchboard users …` commands do to accounts, outside any request and any
 * organization: find a user by email, mark the address verified, set their role.
 */
export { findUserByEmail, markEmailVerified, setRole } from './store.js';
