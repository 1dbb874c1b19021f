/**
 * The organization: its name and description (admins change them), its members, inviting someone
 * (admins), and creating another organization (the creator becomes its admin; the switcher in the
 * header moves between them).
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { useProfile, useSession } from '../../lib/session.js';
import { Button, FormError, SelectField, TextArea, TextField, useSubmit } from '../../ui/form.js';
import { Loading, Page, Panel, when } from '../../ui/page.js';

function Details(props: { admin: boolean }) {
  const loaded = useLoad(() => ok(api.GET('/api/v1/organization')), []);
  return (
    <Panel title="Details">
      <Loading loaded={loaded}>
        {(organization) => (
          <DetailsForm
            key={organization.id}
            admin={props.admin}
            name={organization.name}
            description={organization.description ?? ''}
          />
        )}
      </Loading>
    </Panel>
  );
}

function DetailsForm(props: { admin: boolean; name: string; description: string }) {
  const session = useSession();
  const [name, setName] = useState(props.name);
  const [description, setDescription] = useState(props.description);
  const [saved, setSaved] = useState(false);
  const form = useSubmit(async () => {
    setSaved(false);
    await ok(api.PUT('/api/v1/organization', { body: { name, description: description || null } }));
    setSaved(true);
    await session.refresh();
  });
  if (!props.admin)
    return (
      <dl class="facts">
        <dt>Name</dt>
        <dd>{props.name}</dd>
        <dt>Description</dt>
        <dd>{props.description || '—'}</dd>
      </dl>
    );
  return (
    <form onSubmit={form.submit} noValidate>
      <FormError error={form.error} />
      <TextField label="Name" value={name} onValue={setName} error={form.at('name')} />
      <TextArea
        label="Description"
        value={description}
        onValue={setDescription}
        rows={2}
        error={form.at('description')}
      />
      <Button type="submit" kind="primary" busy={form.busy}>
        Save
      </Button>
      {saved ? <span role="status"> Saved.</span> : null}
    </form>
  );
}

function Members(props: { admin: boolean }) {
  const members = useLoad(() => ok(api.GET('/api/v1/users')), []);
  const [invite, setInvite] = useState({
    email: '',
    first_name: '',
    last_name: '',
    role: 'user' as 'user' | 'admin',
  });
  const [invited, setInvited] = useState<string | undefined>();
  const form = useSubmit(async () => {
    await ok(api.POST('/api/v1/users/invite', { body: invite }));
    setInvited(invite.email);
    setInvite({ email: '', first_name: '', last_name: '', role: 'user' });
  });
  return (
    <Panel title="Members">
      <Loading loaded={members}>
        {(list) => (
          <table>
            <caption class="visually-hidden">Members of the organization</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Joined</th>
              </tr>
            </thead>
            <tbody>
              {list.map((member) => (
                <tr key={member.id}>
                  <td>{`${member.first_name} ${member.last_name}`.trim() || '—'}</td>
                  <td>
                    {member.email}
                    {member.is_verified ? '' : ' (not confirmed)'}
                  </td>
                  <td>{member.role}</td>
                  <td>{when(member.joined_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Loading>
      {props.admin ? (
        <form onSubmit={form.submit} noValidate class="inline-form" aria-label="Invite a member">
          <h3>Invite someone</h3>
          <FormError error={form.error} />
          <div class="row">
            <TextField
              label="Email"
              type="email"
              value={invite.email}
              onValue={(email) => setInvite((i) => ({ ...i, email }))}
              error={form.at('email')}
            />
            <TextField
              label="First name"
              value={invite.first_name}
              onValue={(first_name) => setInvite((i) => ({ ...i, first_name }))}
              error={form.at('first_name')}
            />
            <TextField
              label="Last name"
              value={invite.last_name}
              onValue={(last_name) => setInvite((i) => ({ ...i, last_name }))}
              error={form.at('last_name')}
            />
            <SelectField
              label="Role"
              value={invite.role}
              onValue={(role) => setInvite((i) => ({ ...i, role: role as 'user' | 'admin' }))}
              options={[
                { value: 'user', label: 'Member' },
                { value: 'admin', label: 'Admin' },
              ]}
              error={form.at('role')}
            />
          </div>
          <Button type="submit" kind="primary" busy={form.busy}>
            Send the invitation
          </Button>
          {invited ? (
            <span role="status"> An invitation is on its way to {invited}; it holds for 7 days.</span>
          ) : null}
        </form>
      ) : null}
    </Panel>
  );
}

function NewOrganization() {
  const session = useSession();
  const [name, setName] = useState('');
  const [slug, setSlug] = useState('');
  const form = useSubmit(async () => {
    const created = await ok(api.POST('/api/v1/organization/create', { body: { name, slug } }));
    await session.switchOrganization(created.id);
    setName('');
    setSlug('');
  });
  return (
    <Panel title="Another organization">
      <form onSubmit={form.submit} noValidate>
        <FormError error={form.error} />
        <div class="row">
          <TextField label="Name" value={name} onValue={setName} error={form.at('name')} />
          <TextField
            label="Slug"
            value={slug}
            onValue={setSlug}
            help="Lower-case letters, digits and dashes; unique on this platform."
            error={form.at('slug')}
          />
        </div>
        <Button type="submit" busy={form.busy}>
          Create and switch to it
        </Button>
      </form>
    </Panel>
  );
}

export function Organization() {
  const profile = useProfile();
  const admin = profile.role === 'admin';
  return (
    <Page title="Organization">
      <Details key={`d${profile.organization_id}`} admin={admin} />
      <Members key={`m${profile.organization_id}`} admin={admin} />
      <NewOrganization />
    </Page>
  );
}
