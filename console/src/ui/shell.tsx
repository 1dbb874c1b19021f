/**
 * The frame around every signed-in page: a skip link, the header with the organization switcher and
 * the user's menu, the navigation (a menu button on narrow screens), and the page itself in <main>.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Link, navigate, usePlace } from '../lib/router.js';
import { useProfile, useSession } from '../lib/session.js';

/** The navigation, in the order people reach for it. */
export const SECTIONS: Array<{ href: string; label: string }> = [
  { href: '/', label: 'Overview' },
  { href: '/assistants', label: 'Assistants' },
  { href: '/calls', label: 'Calls' },
  { href: '/campaigns', label: 'Campaigns' },
  { href: '/graphs', label: 'Graphs' },
  { href: '/numbers', label: 'Numbers' },
  { href: '/sms', label: 'SMS' },
  { href: '/compliance', label: 'Compliance' },
  { href: '/organization', label: 'Organization' },
  { href: '/settings', label: 'Settings' },
  { href: '/api-keys', label: 'API keys' },
  { href: '/billing', label: 'Billing' },
];

function current(path: string, href: string): boolean {
  return href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`);
}

function OrganizationSwitcher() {
  const profile = useProfile();
  const session = useSession();
  const [error, setError] = useState<string | undefined>();
  if (profile.organizations.length < 2)
    return <span class="organization">{profile.organizations[0]?.name ?? ''}</span>;
  return (
    <label class="organization">
      <span class="visually-hidden">Organization</span>
      <select
        value={String(profile.organization_id)}
        onChange={async (event) => {
          setError(undefined);
          try {
            await session.switchOrganization(Number(event.currentTarget.value));
            navigate('/');
          } catch (caught) {
            setError(caught instanceof Error ? caught.message : String(caught));
          }
        }}
      >
        {profile.organizations.map((organization) => (
          <option key={organization.id} value={String(organization.id)}>
            {organization.name}
          </option>
        ))}
      </select>
      {error ? <span role="alert">{error}</span> : null}
    </label>
  );
}

export function Shell(props: { children: ComponentChildren }) {
  const profile = useProfile();
  const session = useSession();
  const { path } = usePlace();
  const [menuOpen, setMenuOpen] = useState(false);
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <button
          type="button"
          class="menu-button"
          aria-expanded={menuOpen}
          aria-controls="navigation"
          onClick={() => setMenuOpen((open) => !open)}
        >
          Menu
        </button>
        <Link href="/" class="brand">
          Switchboard
        </Link>
        <OrganizationSwitcher />
        <span class="user">
          {profile.first_name || profile.email} <span class="role">({profile.role})</span>
        </span>
        <button
          type="button"
          class="button plain"
          onClick={async () => {
            await session.signOut();
            navigate('/sign-in', { replace: true });
          }}
        >
          Sign out
        </button>
      </header>
      <div class="body">
        <nav id="navigation" aria-label="Sections" class={menuOpen ? 'open' : ''}>
          <ul>
            {SECTIONS.map((section) => (
              <li key={section.href}>
                <Link
                  href={section.href}
                  aria-current={current(path, section.href) ? 'page' : undefined}
                  onClick={() => setMenuOpen(false)}
                >
                  {section.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabIndex={-1}>
          {profile.is_verified ? null : (
            <p class="notice" role="status">
              Your email address is not confirmed yet: you can look around, but not create API keys.{' '}
              <Link href="/verify">Confirm it</Link>
            </p>
          )}
          {props.children}
        </main>
      </div>
    </div>
  );
}
