/** /api/v1/users: the current user's profile. */
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import type { IdentityService } from '../identity/service.js';
import { ProfileOut, profileView } from '../identity/views.js';

export function userRoutes(app: App, identity: IdentityService): void {
  app.get(
    '/api/v1/users/me',
    {
      config: { access: access.authenticated },
      schema: {
        tags: ['users'],
        summary: 'The authenticated user, their role here, and every organization they belong to',
        response: { 200: ProfileOut },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { user, memberships } = await identity.profile(principal);
      return profileView(user, principal.organization.id, principal.role, memberships);
    },
  );
}
