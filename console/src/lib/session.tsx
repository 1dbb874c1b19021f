/**
 * Who is signed in, for every page: the profile (`GET /users/me`: the user, the current
 * organization and role, every organization of theirs), read once at start and again after a
 * sign-in or a switch. A 401 from any request means the session ended: the console forgets it and
 * shows the sign-in page.
 */
import type { ComponentChildren } from 'preact';
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.js';
import { api, ok } from './api.js';
import { credentials } from './credentials.js';

export type Profile = components['schemas']['Profile'];

export interface Session {
  /** `undefined` while the first read runs; `null` when nobody is signed in. */
  profile: Profile | null | undefined;
  /** Reads the profile again (after sign-in, a switch of organization, a change of name). */
  refresh(): Promise<Profile | null>;
  signOut(): Promise<void>;
  switchOrganization(organizationId: number): Promise<void>;
}

const SessionContext = createContext<Session | undefined>(undefined);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside SessionProvider');
  return session;
}

/** The signed-in profile; only for pages behind the sign-in (the shell never renders them otherwise). */
export function useProfile(): Profile {
  const { profile } = useSession();
  if (!profile) throw new Error('useProfile without a signed-in user');
  return profile;
}

async function readProfile(): Promise<Profile | null> {
  const { data, response } = await api.GET('/api/v1/users/me');
  if (response.status === 401) return null;
  if (!data) throw new Error(`Could not read your profile (${response.status})`);
  // A session cookie without its CSRF token (cleared storage) cannot change anything: sign in again.
  if (!credentials.csrf()) return null;
  return data;
}

export function SessionProvider(props: { children: ComponentChildren }) {
  const [profile, setProfile] = useState<Profile | null | undefined>(undefined);

  const refresh = useCallback(async () => {
    const next = await readProfile().catch(() => null);
    setProfile(next);
    return next;
  }, []);

  useEffect(() => {
    void refresh();
    return credentials.onExpired(() => {
      credentials.forget();
      setProfile(null);
    });
  }, [refresh]);

  const signOut = useCallback(async () => {
    await api.POST('/api/v1/auth/logout').catch(() => undefined);
    credentials.forget();
    setProfile(null);
  }, []);

  const switchOrganization = useCallback(
    async (organizationId: number) => {
      const tokens = await ok(
        api.POST('/api/v1/auth/switch-organization', { body: { organization_id: organizationId } }),
      );
      credentials.signedIn(tokens);
      await refresh();
    },
    [refresh],
  );

  return (
    <SessionContext.Provider value={{ profile, refresh, signOut, switchOrganization }}>
      {props.children}
    </SessionContext.Provider>
  );
}
