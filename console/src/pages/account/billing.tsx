/**
 * The organization's wallet: its balance, and the ledger of what came in (trial credit, grants) and
 * went out (calls, messages), newest first, a page at a time.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { useProfile } from '../../lib/session.js';
import { Button } from '../../ui/form.js';
import { Empty, Loading, Page, Panel, when } from '../../ui/page.js';

const PER_PAGE = 25;

function money(amount: number, currency: string): string {
  return new Intl.NumberFormat(undefined, { style: 'currency', currency, maximumFractionDigits: 4 }).format(
    amount,
  );
}

export function Billing() {
  const profile = useProfile();
  const [page, setPage] = useState(1);
  const wallet = useLoad(() => ok(api.GET('/v1/billing/wallet')), [profile.organization_id]);
  const ledger = useLoad(async () => {
    const { data, error, response } = await api.GET('/v1/billing/ledger', {
      params: { query: { page, per_page: PER_PAGE } },
    });
    if (!data)
      throw new Error((error as { detail?: string } | undefined)?.detail ?? `Ledger (${response.status})`);
    return { entries: data.entries, total: data.pagination.total_items };
  }, [profile.organization_id, page]);
  const currency = wallet.data?.currency ?? 'USD';
  return (
    <Page title="Billing">
      <Panel title="Wallet">
        <Loading loaded={wallet}>
          {(w) => (
            <p class="figure">
              <span class="figure-value">{money(w.balance, w.currency)}</span>
              <span class="figure-label">balance</span>
            </p>
          )}
        </Loading>
      </Panel>
      <Panel title="Ledger">
        <Loading loaded={ledger}>
          {({ entries, total }) =>
            entries.length === 0 ? (
              <Empty>Nothing yet.</Empty>
            ) : (
              <>
                <table>
                  <caption class="visually-hidden">Ledger entries, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">When</th>
                      <th scope="col">What</th>
                      <th scope="col" class="number">
                        Amount
                      </th>
                      <th scope="col" class="number">
                        Balance after
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {entries.map((entry) => (
                      <tr key={entry.id}>
                        <td>{when(entry.created_at)}</td>
                        <td>
                          {entry.description} <span class="tag">{entry.kind.replace('_', ' ')}</span>
                        </td>
                        <td class="number">{money(entry.amount, currency)}</td>
                        <td class="number">{money(entry.balance_after, currency)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                <nav class="pager" aria-label="Ledger pages">
                  <Button disabled={page <= 1} onClick={() => setPage((p) => p - 1)}>
                    Newer
                  </Button>
                  <span>
                    Page {page} of {Math.max(1, Math.ceil(total / PER_PAGE))}
                  </span>
                  <Button disabled={page * PER_PAGE >= total} onClick={() => setPage((p) => p + 1)}>
                    Older
                  </Button>
                </nav>
              </>
            )
          }
        </Loading>
      </Panel>
    </Page>
  );
}
