/** The caller's organization. Settings and provider credentials arrive with the accounts issue. */
import type { Db } from '../../db/client.js';
import type { Principal } from '../../http/access.js';
import { notFound } from '../../http/errors.js';
import * as store from './store.js';

export class OrganizationService {
  constructor(private readonly deps: { db: Db }) {}

  async current(principal: Principal): Promise<store.OrganizationRow> {
    const row = await store.findOwnOrganization(this.deps.db, principal.tenant);
    if (!row) throw notFound('Organization not found');
    return row;
  }
}
