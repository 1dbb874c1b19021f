/**
 * What the console keeps of a sign-in. The session itself is the httpOnly `sb_session` cookie,
 * which scripts cannot read; beside it:
 * - the session's CSRF token, in localStorage so every tab of the session can change things (it is
 *   worthless without the cookie, which another site's page never sends: SameSite=Lax);
 * - the access token, in this tab's sessionStorage only, for the JWT-only operations (SMS
 *   compliance). It expires after 30 minutes; a tab without a fresh one asks for the password again
 *   on those pages. No refresh token is kept: a stolen one would outlive the tab.
 */
const CSRF_KEY = 'switchboard.csrf';
const ACCESS_KEY = 'switchboard.access';

interface Access {
  token: string;
  expiresAt: number;
}

type Listener = () => void;
const listeners = new Set<Listener>();

export const credentials = {
  csrf(): string | undefined {
    return localStorage.getItem(CSRF_KEY) ?? undefined;
  },

  /** The access token, while it has more than a minute to live. */
  accessToken(): string | undefined {
    const raw = sessionStorage.getItem(ACCESS_KEY);
    if (!raw) return undefined;
    try {
      const access = JSON.parse(raw) as Access;
      return access.expiresAt - Date.now() > 60_000 ? access.token : undefined;
    } catch {
      return undefined;
    }
  },

  /** After sign-in, a switch of organization, or an invitation accepted. */
  signedIn(tokens: { csrf_token?: string | null; access_token: string; expires_in: number }): void {
    if (tokens.csrf_token) localStorage.setItem(CSRF_KEY, tokens.csrf_token);
    const access: Access = { token: tokens.access_token, expiresAt: Date.now() + tokens.expires_in * 1000 };
    sessionStorage.setItem(ACCESS_KEY, JSON.stringify(access));
  },

  forget(): void {
    localStorage.removeItem(CSRF_KEY);
    sessionStorage.removeItem(ACCESS_KEY);
  },

  /** The API said 401: whoever shows the session listens and sends the user to sign in. */
  expired(): void {
    for (const listener of listeners) listener();
  },

  onExpired(listener: Listener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
