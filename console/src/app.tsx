/**
 * The console: which page a path shows, and who may see it. Pages before a session (sign in,
 * register, the verification and invitation links) are open; every other path asks for a sign-in
 * first and comes back to it afterwards.
 */
import { useEffect } from 'preact/hooks';
import { match, navigate, type Route, usePlace } from './lib/router.js';
import { SessionProvider, useSession } from './lib/session.js';
import { ApiKeys } from './pages/account/api-keys.js';
import { Billing } from './pages/account/billing.js';
import { Organization } from './pages/account/organization.js';
import { AcceptInvitation, Register, SignIn, Verify } from './pages/account/sign-in.js';
import { Assistants } from './pages/assistants/assistants.js';
import { AssistantEditor } from './pages/assistants/editor/editor.js';
import { CallPage } from './pages/calls/call.js';
import { Calls } from './pages/calls/calls.js';
import { CampaignPage } from './pages/campaigns/campaign.js';
import { Campaigns } from './pages/campaigns/campaigns.js';
import { Compliance } from './pages/compliance/compliance.js';
import { GraphPage } from './pages/graphs/graph.js';
import { Graphs } from './pages/graphs/graphs.js';
import { NumberPage } from './pages/numbers/number.js';
import { Numbers } from './pages/numbers/numbers.js';
import { Overview } from './pages/overview/overview.js';
import { Settings } from './pages/settings/settings.js';
import { Sms } from './pages/sms/sms.js';
import { Talk } from './pages/talk/talk.js';
import { Shell } from './ui/shell.js';

/** Open to anyone: the ways into a session. */
const OPEN: Route[] = [
  { pattern: '/sign-in', component: SignIn },
  { pattern: '/register', component: Register },
  { pattern: '/verify', component: Verify },
  { pattern: '/invitation', component: AcceptInvitation },
];

/** Behind the sign-in, inside the shell. */
export const ROUTES: Route[] = [
  { pattern: '/', component: Overview },
  { pattern: '/assistants', component: Assistants },
  { pattern: '/assistants/:id/talk', component: Talk },
  { pattern: '/assistants/:id', component: AssistantEditor },
  { pattern: '/calls', component: Calls },
  { pattern: '/calls/:id', component: CallPage },
  { pattern: '/numbers', component: Numbers },
  { pattern: '/numbers/:id', component: NumberPage },
  { pattern: '/graphs', component: Graphs },
  { pattern: '/graphs/:id', component: GraphPage },
  { pattern: '/sms', component: Sms },
  { pattern: '/campaigns', component: Campaigns },
  { pattern: '/campaigns/:id', component: CampaignPage },
  { pattern: '/compliance', component: Compliance },
  { pattern: '/organization', component: Organization },
  { pattern: '/settings', component: Settings },
  { pattern: '/api-keys', component: ApiKeys },
  { pattern: '/billing', component: Billing },
];

/** Where `/` leads: the overview, which is `/` itself. */
const HOME = '/';

function NotFound() {
  return (
    <section class="page">
      <h1>Not found</h1>
      <p>There is no such page in the console.</p>
    </section>
  );
}

function Pages() {
  const place = usePlace();
  const { profile } = useSession();
  const open = match(OPEN, place.path);
  const signedOut = profile === null && !open;
  useEffect(() => {
    if (signedOut) {
      const next = place.path === '/' ? '' : `?next=${encodeURIComponent(place.path + location.search)}`;
      navigate(`/sign-in${next}`, { replace: true });
    } else if (profile && place.path === '/' && HOME !== '/') navigate(HOME, { replace: true });
  }, [signedOut, profile, place.path]);

  if (open) {
    const Page = open.route.component;
    return <Page params={open.params} place={place} />;
  }
  if (!profile)
    return (
      <p class="muted" aria-live="polite">
        Loading…
      </p>
    );
  const found = match(ROUTES, place.path);
  const Page = found?.route.component ?? NotFound;
  return (
    <Shell>
      <Page params={found?.params ?? {}} place={place} />
    </Shell>
  );
}

export function App() {
  return (
    <SessionProvider>
      <Pages />
    </SessionProvider>
  );
}
