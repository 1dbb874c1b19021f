/**
 * What other domains may read of API keys: the principal behind a key, for the authenticator (not
 * tenant-scoped: a key is how a request learns its tenant). Keys are written only here.
 */
export { loadKeyPrincipal } from './store.js';
