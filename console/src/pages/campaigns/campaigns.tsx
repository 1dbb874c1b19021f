/**
 * The organization's campaigns: the list (name, status, type, progress counts, created), a page at a
 * time, and the form that creates one. Each campaign's page (`/campaigns/:id`) runs it.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link } from '../../lib/router.js';
import { useProfile } from '../../lib/session.js';
import { Button } from '../../ui/form.js';
import { Empty, Loading, Page, Panel, when } from '../../ui/page.js';
import { CreateCampaign } from './create.js';
import { typeLabel } from './model.js';

const PER_PAGE = 25;

export function Campaigns() {
  const profile = useProfile();
  const [page, setPage] = useState(1);
  const campaigns = useLoad(
    () => ok(api.GET('/api/v1/campaigns', { params: { query: { page, per_page: PER_PAGE } } })),
    [profile.organization_id, page],
  );
  return (
    <Page title="Campaigns">
      <Panel title="Your campaigns">
        <Loading loaded={campaigns}>
          {({ campaigns: list, pagination }) =>
            list.length === 0 ? (
              <Empty>No campaigns yet. Create one below, then import its contacts on its page.</Empty>
            ) : (
              <>
                <table>
                  <caption class="visually-hidden">The organization's campaigns</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Status</th>
                      <th scope="col">Type</th>
                      <th scope="col" class="number">
                        Contacts
                      </th>
                      <th scope="col" class="number">
                        Completed
                      </th>
                      <th scope="col" class="number">
                        Failed
                      </th>
                      <th scope="col">Created</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.map((campaign) => (
                      <tr key={campaign.id}>
                        <th scope="row">
                          <Link href={`/campaigns/${campaign.id}`}>{campaign.name}</Link>
                        </th>
                        <td>
                          <span class={`tag status-${campaign.status}`}>{campaign.status}</span>
                        </td>
                        <td>{typeLabel(campaign.campaign_type)}</td>
                        <td class="number">{campaign.total_contacts}</td>
                        <td class="number">{campaign.completed_contacts}</td>
                        <td class="number">{campaign.failed_contacts}</td>
                        <td>{when(campaign.created_at)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                <Pager page={page} pages={pagination.total_pages} onPage={setPage} />
              </>
            )
          }
        </Loading>
      </Panel>
      <Panel title="Create a campaign">
        <CreateCampaign key={profile.organization_id} />
      </Panel>
    </Page>
  );
}

/** Previous / next page, with where the reader is. */
export function Pager(props: { page: number; pages: number; onPage(page: number): void }) {
  if (props.pages <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <Button disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>
        Previous
      </Button>
      <span aria-live="polite">
        Page {props.page} of {props.pages}
      </span>
      <Button disabled={props.page >= props.pages} onClick={() => props.onPage(props.page + 1)}>
        Next
      </Button>
    </nav>
  );
}
