/** /api/v1/auth: register, verify email, login, refresh, logout, switch organization. */
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors } from '../../http/responses.js';
import { Id, MessageBody } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { SESSION_COOKIE } from './principal.js';
import type { IdentityService } from './service.js';
import { type CookiePolicy, sendSignedIn } from './sign-in-reply.js';
import { TokenBody, UserOut, userView, WhoAmIOut, whoAmIView } from './views.js';

const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: 8, maxLength: 256 });
const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', description: 'Not blank' });
const tags = ['auth'];

export function identityRoutes(app: App, identity: IdentityService, cookie: CookiePolicy): void {
  app.post(
    '/api/v1/auth/register',
    {
      config: { access: access.public },
      schema: {
        operationId: 'registerAccount',
        tags,
        summary: 'Create an account and its first organization',
        body: Type.Object({
          email: Email,
          password: Password,
          first_name: Name,
          last_name: Name,
          organization_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
        }),
        response: { 201: TokenBody, ...errors({ 409: 'An account with this email already exists' }) },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const signedIn = await identity.register(
        {
          email: body.email,
          password: body.password,
          firstName: body.first_name,
          lastName: body.last_name,
          organizationName: body.organization_name,
        },
        request.headers['user-agent'] ?? null,
      );
      return sendSignedIn(reply, signedIn, cookie, 201);
    },
  );

  const VerifyEmailOut = Type.Object({ message: Type.String(), user: UserOut });
  const verifyToken = Type.String({ minLength: 1, maxLength: 200 });

  app.post(
    '/api/v1/auth/verify-email',
    {
      config: { access: access.public },
      schema: {
        operationId: 'verifyEmail',
        tags,
        summary: 'Confirm an email address with the token from the verification mail',
        body: Type.Object({ token: verifyToken }),
        response: { 200: VerifyEmailOut, ...errors({ 400: 'Invalid or expired verification token' }) },
      },
    },
    async (request) => ({
      message: 'Email verified',
      user: userView(await identity.verifyEmail(request.body.token)),
    }),
  );

  app.get(
    '/api/v1/auth/verify-email',
    {
      config: { access: access.public },
      schema: {
        operationId: 'verifyEmailLink',
        tags,
        summary: 'Confirm an email address by opening the link in the verification mail',
        querystring: Type.Object({ token: verifyToken }),
        response: { 200: VerifyEmailOut, ...errors({ 400: 'Invalid or expired verification token' }) },
      },
    },
    async (request) => ({
      message: 'Email verified',
      user: userView(await identity.verifyEmail(request.query.token)),
    }),
  );

  app.post(
    '/api/v1/auth/resend-verification',
    {
      config: { access: access.user },
      schema: {
        operationId: 'resendVerification',
        tags,
        summary: 'Send a new verification mail',
        response: { 200: MessageBody, ...errors({ 400: 'Email address is already verified' }) },
      },
    },
    async (request) => {
      await identity.resendVerification(principalOf(request));
      return { message: 'Verification mail sent' };
    },
  );

  app.post(
    '/api/v1/auth/login',
    {
      config: { access: access.public },
      schema: {
        operationId: 'login',
        tags,
        summary: 'Sign in: access token, refresh token, and the dashboard session cookie',
        body: Type.Object({
          email: Type.String({ minLength: 1, maxLength: 254 }),
          password: Type.String({ minLength: 1, maxLength: 256 }),
          organization_id: Type.Optional(Id),
        }),
        response: {
          200: TokenBody,
          ...errors({
            401: 'Incorrect email or password',
            403: 'Not a member of the organization asked for, or of any',
            429: 'Too many failed sign-ins from this address or for this email (Retry-After)',
          }),
        },
      },
    },
    async (request, reply) => {
      const signedIn = await identity.login(
        {
          email: request.body.email,
          password: request.body.password,
          organizationId: request.body.organization_id,
        },
        request.headers['user-agent'] ?? null,
        request.ip,
      );
      return sendSignedIn(reply, signedIn, cookie);
    },
  );

  app.post(
    '/api/v1/auth/refresh',
    {
      config: { access: access.public },
      schema: {
        operationId: 'refreshTokens',
        tags,
        summary: 'Exchange a refresh token for new tokens (the refresh token rotates)',
        body: Type.Object({ refresh_token: Type.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: TokenBody, ...errors({ 401: 'Invalid, expired or already used refresh token' }) },
      },
    },
    async (request, reply) => sendSignedIn(reply, await identity.refresh(request.body.refresh_token), cookie),
  );

  app.post(
    '/api/v1/auth/logout',
    {
      config: { access: access.user },
      schema: {
        operationId: 'logout',
        tags,
        summary: 'End the current session (its tokens and cookie)',
        response: { 200: MessageBody },
      },
    },
    async (request, reply) => {
      await identity.logout(principalOf(request));
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return { message: 'Logged out' };
    },
  );

  app.post(
    '/api/v1/auth/switch-organization',
    {
      config: { access: access.user },
      schema: {
        operationId: 'switchOrganization',
        tags,
        summary: 'Move the current session to another organization of the user',
        body: Type.Object({ organization_id: Id }),
        response: {
          200: TokenBody,
          ...errors({
            404: 'Not a member of that organization',
            409: 'Another request changed the session during the switch; try again',
          }),
        },
      },
    },
    async (request, reply) =>
      sendSignedIn(
        reply,
        await identity.switchOrganization(principalOf(request), request.body.organization_id),
        cookie,
      ),
  );

  app.get(
    '/api/v1/auth/whoami',
    {
      config: { access: access.authenticated },
      schema: {
        operationId: 'whoAmI',
        tags,
        summary: 'What the presented credential is and may do (answered without a database read)',
        response: { 200: WhoAmIOut },
      },
    },
    async (request) => whoAmIView(principalOf(request)),
  );
}
