/**
 * The Switchboard API client: openapi-fetch's `createClient` typed by `schema.d.ts` (generated from
 * the API's OpenAPI document), with the credential sent as `Authorization: Bearer …` on every request.
 * Paths, parameters, bodies and responses are checked against the document at compile time.
 */
import createClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch';
import type { paths } from './schema.js';

/**
 * `paths`, `components`, `operations`, `webhooks`, and the API's named resources and bodies
 * (`Assistant`, `AssistantCreate`, `Call`, `ErrorBody`…).
 */
export type * from './schema.js';

export interface SwitchboardClientOptions {
  /** Where the API listens, e.g. `http://127.0.0.1:8000` (no `/api/v1`: paths carry their prefix). */
  baseUrl: string;
  /** A user API key (`sk_…`), from `POST /api/v1/users/me/api-keys`. */
  apiKey?: string;
  /** A JWT access token, from `POST /api/v1/auth/login` (routes marked JWT-only need one). */
  accessToken?: string;
  /** Another `fetch` (a test double, a proxy-aware one); the global `fetch` by default. */
  fetch?: ClientOptions['fetch'];
  /** Headers sent with every request. */
  headers?: ClientOptions['headers'];
}

export type SwitchboardClient = Client<paths>;

export function createSwitchboardClient(options: SwitchboardClientOptions): SwitchboardClient {
  // Two credentials would leave the caller guessing which one the server saw.
  if (options.apiKey && options.accessToken) {
    throw new TypeError('createSwitchboardClient: give apiKey or accessToken, not both');
  }
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
  });
  const credential = options.apiKey ?? options.accessToken;
  if (credential) client.use(bearer(credential));
  return client;
}

/** Adds `Authorization: Bearer <credential>` unless the request already carries its own. */
export function bearer(credential: string): Middleware {
  return {
    onRequest({ request }) {
      if (!request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${credential}`);
      return request;
    },
  };
}
