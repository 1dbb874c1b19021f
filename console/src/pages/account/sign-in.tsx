/**
 * The pages before a session: sign in, create an account, confirm the email address (the link in
 * the verification mail opens /verify?token=…), and accept an invitation (/invitation?token=…).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { credentials } from '../../lib/credentials.js';
import { Link, navigate, type Place } from '../../lib/router.js';
import { useSession } from '../../lib/session.js';
import { Button, FormError, TextField, useSubmit } from '../../ui/form.js';

function AuthFrame(props: { title: string; children: preact.ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · Switchboard`;
  }, [props.title]);
  return (
    <main class="auth" id="main" tabIndex={-1}>
      <div class="auth-card">
        <p class="brand">Switchboard</p>
        <h1>{props.title}</h1>
        {props.children}
      </div>
    </main>
  );
}

export function SignIn(props: { place: Place }) {
  const session = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const form = useSubmit(async () => {
    const tokens = await ok(api.POST('/api/v1/auth/login', { body: { email, password } }));
    credentials.signedIn(tokens);
    await session.refresh();
    navigate(props.place.query.get('next') ?? '/', { replace: true });
  });
  return (
    <AuthFrame title="Sign in">
      <form onSubmit={form.submit} noValidate>
        <FormError error={form.error} />
        <TextField
          label="Email"
          type="email"
          name="email"
          autoComplete="username"
          required
          value={email}
          onValue={setEmail}
          error={form.at('email')}
        />
        <TextField
          label="Password"
          type="password"
          name="password"
          autoComplete="current-password"
          required
          value={password}
          onValue={setPassword}
          error={form.at('password')}
        />
        <Button type="submit" kind="primary" busy={form.busy}>
          Sign in
        </Button>
      </form>
      <p>
        New here? <Link href="/register">Create an account</Link>
      </p>
    </AuthFrame>
  );
}

export function Register() {
  const session = useSession();
  const [fields, setFields] = useState({
    first_name: '',
    last_name: '',
    email: '',
    password: '',
    organization_name: '',
  });
  const set = (name: keyof typeof fields) => (value: string) => setFields((f) => ({ ...f, [name]: value }));
  const form = useSubmit(async () => {
    const { organization_name, ...rest } = fields;
    const tokens = await ok(
      api.POST('/api/v1/auth/register', {
        body: { ...rest, ...(organization_name.trim() ? { organization_name } : {}) },
      }),
    );
    credentials.signedIn(tokens);
    await session.refresh();
    navigate('/verify', { replace: true });
  });
  return (
    <AuthFrame title="Create your account">
      <form onSubmit={form.submit} noValidate>
        <FormError error={form.error} />
        <div class="row">
          <TextField
            label="First name"
            name="first_name"
            autoComplete="given-name"
            value={fields.first_name}
            onValue={set('first_name')}
            error={form.at('first_name')}
          />
          <TextField
            label="Last name"
            name="last_name"
            autoComplete="family-name"
            value={fields.last_name}
            onValue={set('last_name')}
            error={form.at('last_name')}
          />
        </div>
        <TextField
          label="Email"
          type="email"
          name="email"
          autoComplete="email"
          value={fields.email}
          onValue={set('email')}
          error={form.at('email')}
        />
        <TextField
          label="Password"
          type="password"
          name="password"
          autoComplete="new-password"
          help="At least 8 characters."
          value={fields.password}
          onValue={set('password')}
          error={form.at('password')}
        />
        <TextField
          label="Organization name"
          name="organization_name"
          help="Optional: your name's organization is created otherwise. You are its admin."
          value={fields.organization_name}
          onValue={set('organization_name')}
          error={form.at('organization_name')}
        />
        <Button type="submit" kind="primary" busy={form.busy}>
          Create account
        </Button>
      </form>
      <p>
        Have an account? <Link href="/sign-in">Sign in</Link>
      </p>
    </AuthFrame>
  );
}

/**
 * Confirms the address: at once with the link's token, or with the token pasted from the mail.
 * Signed in, it also offers a new mail.
 */
export function Verify(props: { place: Place }) {
  const session = useSession();
  const linked = props.place.query.get('token') ?? '';
  const [token, setToken] = useState(linked);
  const [done, setDone] = useState(false);
  const form = useSubmit(async () => {
    await ok(api.POST('/api/v1/auth/verify-email', { body: { token: token.trim() } }));
    setDone(true);
    if (session.profile) await session.refresh();
  });
  const resend = useSubmit(async () => {
    await ok(api.POST('/api/v1/auth/resend-verification'));
    return true;
  });
  const [resent, setResent] = useState(false);
  useEffect(() => {
    if (linked) void form.submit();
  }, [linked]);
  if (done)
    return (
      <AuthFrame title="Email confirmed">
        <p role="status">Your email address is confirmed.</p>
        <p>
          <Link href={session.profile ? '/' : '/sign-in'}>
            {session.profile ? 'Go to the console' : 'Sign in'}
          </Link>
        </p>
      </AuthFrame>
    );
  return (
    <AuthFrame title="Confirm your email">
      <p>
        We sent a mail{session.profile ? ` to ${session.profile.email}` : ''}. Open its link, or paste the
        token it holds here.
      </p>
      <form onSubmit={form.submit} noValidate>
        <FormError error={form.error} />
        <TextField
          label="Verification token"
          name="token"
          autoComplete="one-time-code"
          value={token}
          onValue={setToken}
          error={form.at('token')}
        />
        <Button type="submit" kind="primary" busy={form.busy}>
          Confirm
        </Button>
      </form>
      {session.profile ? (
        <p>
          <Button
            busy={resend.busy}
            onClick={async () => {
              if (await resend.submit()) setResent(true);
            }}
          >
            Send a new mail
          </Button>{' '}
          <Link href="/">Later</Link>
          {resent ? <span role="status"> A new mail is on its way.</span> : null}
          <FormError error={resend.error} />
        </p>
      ) : null}
    </AuthFrame>
  );
}

export function AcceptInvitation(props: { place: Place }) {
  const session = useSession();
  const token = props.place.query.get('token') ?? '';
  const [invitation, setInvitation] = useState<{ organization_name: string; email: string } | undefined>();
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const look = useSubmit(async () => {
    setInvitation(await ok(api.GET('/api/v1/users/invitation/{token}', { params: { path: { token } } })));
  });
  useEffect(() => {
    if (token) void look.submit();
  }, [token]);
  const form = useSubmit(async () => {
    const tokens = await ok(
      api.POST('/api/v1/users/accept-invitation', { body: { token, password, confirm_password: confirm } }),
    );
    credentials.signedIn(tokens);
    await session.refresh();
    navigate('/', { replace: true });
  });
  return (
    <AuthFrame title="Join an organization">
      <FormError error={look.error} />
      {invitation ? (
        <form onSubmit={form.submit} noValidate>
          <p>
            {invitation.email} is invited to <strong>{invitation.organization_name}</strong>. Choose a
            password (or give your account's, if you have one).
          </p>
          <FormError error={form.error} />
          <TextField
            label="Password"
            type="password"
            autoComplete="new-password"
            value={password}
            onValue={setPassword}
            error={form.at('password')}
          />
          <TextField
            label="Confirm the password"
            type="password"
            autoComplete="new-password"
            value={confirm}
            onValue={setConfirm}
            error={form.at('confirm_password')}
          />
          <Button type="submit" kind="primary" busy={form.busy}>
            Accept the invitation
          </Button>
        </form>
      ) : !token ? (
        <p>The invitation link is incomplete: open the link from the mail again.</p>
      ) : null}
    </AuthFrame>
  );
}
