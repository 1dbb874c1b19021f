/**
 * The SMS compliance API takes only a JWT access token, never the session cookie. A tab holds one
 * from its sign-in (lib/credentials.ts) for 30 minutes; a tab without one — opened later, or after
 * the token ran out — asks for the password here and signs in again to the same organization,
 * which gives this tab a fresh token (and the session a fresh cookie and CSRF token).
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, api, ok } from '../../lib/api.js';
import { credentials } from '../../lib/credentials.js';
import { useProfile } from '../../lib/session.js';
import { Button, FormError, TextField, useSubmit } from '../../ui/form.js';
import { Panel } from '../../ui/page.js';

/** Whether an error is the API refusing a request for want of an access token. */
export function needsAccessToken(error: Error | undefined): boolean {
  return error instanceof ApiError && error.status === 403 && /JWT/.test(error.message);
}

/**
 * Renders `children` while the tab has an access token; the password form otherwise. `lost()` (given
 * to the children) brings the form back when a request was refused for want of a token.
 */
export function AccessGate(props: { children: (lost: () => void) => ComponentChildren }) {
  const profile = useProfile();
  const [round, setRound] = useState(0);
  const [password, setPassword] = useState('');
  const form = useSubmit(async () => {
    const tokens = await ok(
      api.POST('/api/v1/auth/login', {
        body: { email: profile.email, password, organization_id: profile.organization_id },
      }),
    );
    credentials.signedIn(tokens);
    setPassword('');
    setRound((n) => n + 1);
  });
  if (credentials.accessToken()) return <div key={round}>{props.children(() => setRound((n) => n + 1))}</div>;
  return (
    <Panel title="Confirm it is you">
      <p>
        SMS compliance is kept for signed-in people only, with a token this browser tab gets at sign-in and
        keeps for 30 minutes. Give your password to get one.
      </p>
      <form onSubmit={form.submit} noValidate aria-label="Confirm your password">
        <FormError error={form.error} />
        <p>
          Signed in as <strong>{profile.email}</strong>.
        </p>
        <TextField
          label="Password"
          type="password"
          autoComplete="current-password"
          value={password}
          onValue={setPassword}
          error={form.at('password')}
        />
        <Button type="submit" kind="primary" busy={form.busy}>
          Continue
        </Button>
      </form>
    </Panel>
  );
}
