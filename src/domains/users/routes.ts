/** /api/v1/users: the current user's profile and password, the organization's members, invitations. */
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors } from '../../http/responses.js';
import type { App } from '../../http/types.js';
import { iso, Timestamp } from '../../lib/schema.js';
import { invalidField } from '../errors.js';
import type { IdentityService } from '../identity/service.js';
import { type CookiePolicy, sendSignedIn } from '../identity/sign-in-reply.js';
import { ProfileOut, profileView, RoleOut, TokenBody } from '../identity/views.js';
import type { UserService } from './service.js';
import { InvitationOut, invitationView, MemberOut, memberView } from './views.js';

const tags = ['users'];
const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', description: 'Not blank' });
const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: 8, maxLength: 256 });
const InvitationToken = Type.String({ minLength: 20, maxLength: 200, pattern: '^[A-Za-z0-9_-]+$' });

export function userRoutes(
  app: App,
  deps: { identity: IdentityService; users: UserService; cookie: CookiePolicy },
): void {
  const { identity, users } = deps;

  app.get(
    '/api/v1/users/me',
    {
      config: { access: access.authenticated },
      schema: {
        operationId: 'getMyProfile',
        tags,
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

  app.put(
    '/api/v1/users/me',
    {
      config: { access: access.user },
      schema: {
        operationId: 'updateMyProfile',
        tags,
        summary: 'Change your name, email (verified again) or preferences',
        body: Type.Object({
          first_name: Type.Optional(Name),
          last_name: Type.Optional(Name),
          email: Type.Optional(Email),
          preferences: Type.Optional(
            Type.Object(
              { timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) },
              {
                additionalProperties: true,
                description: 'Replaces the stored preferences. `timezone` is an IANA zone.',
              },
            ),
          ),
        }),
        response: { 200: ProfileOut, ...errors({ 409: 'An account with this email already exists' }) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const body = request.body;
      await users.updateProfile(principal, {
        firstName: body.first_name,
        lastName: body.last_name,
        email: body.email,
        preferences: body.preferences as Record<string, unknown> | undefined,
      });
      const { user, memberships } = await identity.profile(principal);
      return profileView(user, principal.organization.id, principal.role, memberships);
    },
  );

  app.post(
    '/api/v1/users/me/change-password',
    {
      config: { access: access.user },
      schema: {
        operationId: 'changePassword',
        tags,
        summary: 'Set a new password; every other session of yours ends',
        body: Type.Object({
          current_password: Type.String({
            maxLength: 256,
            description: 'Empty when the account has no password yet',
          }),
          new_password: Password,
        }),
        response: {
          200: Type.Object({ message: Type.String(), sessions_ended: Type.Integer() }),
          ...errors({ 400: 'Current password is incorrect' }),
        },
      },
    },
    async (request) => {
      const ended = await users.changePassword(
        principalOf(request),
        request.body.current_password,
        request.body.new_password,
      );
      return { message: 'Password changed', sessions_ended: ended };
    },
  );

  app.get(
    '/api/v1/users',
    {
      config: { access: access.area('organization') },
      schema: {
        operationId: 'listMembers',
        tags,
        summary: "The organization's members and their roles",
        response: { 200: Type.Array(MemberOut) },
      },
    },
    async (request) => (await users.members(principalOf(request))).map(memberView),
  );

  app.post(
    '/api/v1/users/invite',
    {
      config: { access: { role: 'admin', area: 'organization' } },
      schema: {
        operationId: 'inviteMember',
        tags,
        summary: 'Invite someone by email; the mail carries a single-use token valid for 7 days',
        body: Type.Object({
          email: Email,
          first_name: Name,
          last_name: Name,
          role: Type.Union([Type.Literal('user'), Type.Literal('admin')], { default: 'user' }),
        }),
        response: {
          201: InvitationOut,
          ...errors({ 409: 'This person is already a member of the organization' }),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const invitation = await users.invite(principalOf(request), {
        email: body.email,
        firstName: body.first_name,
        lastName: body.last_name,
        role: body.role,
      });
      return reply.code(201).send(invitationView(invitation));
    },
  );

  app.get(
    '/api/v1/users/invitation/:token',
    {
      config: { access: access.public },
      schema: {
        operationId: 'getInvitation',
        tags,
        summary: 'What an invitation token is for (public: the token is the credential)',
        params: Type.Object({ token: InvitationToken }),
        response: {
          200: Type.Object({
            organization_name: Type.String(),
            email: Type.String(),
            first_name: Type.String(),
            last_name: Type.String(),
            role: RoleOut,
            expires_at: Timestamp,
          }),
          ...errors({ 404: 'Invitation not found or no longer valid' }),
        },
      },
    },
    async (request) => {
      const invitation = await users.invitation(request.params.token);
      return {
        organization_name: invitation.organizationName,
        email: invitation.email,
        first_name: invitation.firstName,
        last_name: invitation.lastName,
        role: invitation.role,
        expires_at: iso(invitation.expiresAt),
      };
    },
  );

  app.post(
    '/api/v1/users/accept-invitation',
    {
      config: { access: access.public },
      schema: {
        operationId: 'acceptInvitation',
        tags,
        summary: 'Accept an invitation: creates the account (or joins an existing one) and signs it in',
        body: Type.Object({
          token: InvitationToken,
          password: Password,
          confirm_password: Type.String({ maxLength: 256 }),
        }),
        response: {
          200: TokenBody,
          ...errors({
            401: 'An account with this email exists and the password is not its own',
            404: 'Invitation not found or no longer valid',
            409: 'An account with this email was created meanwhile; try again',
          }),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (body.password !== body.confirm_password) {
        throw invalidField(['body', 'confirm_password'], 'Passwords do not match');
      }
      return sendSignedIn(
        reply,
        await users.acceptInvitation(body.token, body.password, request.headers['user-agent'] ?? null),
        deps.cookie,
      );
    },
  );
}
