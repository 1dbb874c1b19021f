/** /api/v1/organization: the caller's current organization. */
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { iso, Timestamp } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import type { OrganizationService } from './service.js';
import type { OrganizationRow } from './store.js';

const OrganizationOut = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    slug: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    domain: Type.Union([Type.String(), Type.Null()]),
    settings: Type.Object({}, { additionalProperties: true }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Organization' },
);

export function organizationView(row: OrganizationRow) {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    domain: row.domain,
    settings: row.settings,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

export function organizationRoutes(app: App, organizations: OrganizationService): void {
  app.get(
    '/api/v1/organization',
    {
      config: { access: access.area('organization') },
      schema: {
        tags: ['organization'],
        summary: 'The current organization',
        response: { 200: OrganizationOut },
      },
    },
    async (request) => organizationView(await organizations.current(principalOf(request))),
  );
}
