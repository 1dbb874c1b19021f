/** Answers a sign-in (register, login, refresh, switch, accepted invitation): token body + session cookie. */
import type { FastifyReply } from 'fastify';
import { SESSION_COOKIE } from './principal.js';
import type { SignedIn } from './service.js';
import { tokenView } from './views.js';

export interface CookiePolicy {
  /** Mark the cookie Secure (PUBLIC_URL is https). */
  secure: boolean;
}

export function sendSignedIn(reply: FastifyReply, signedIn: SignedIn, cookie: CookiePolicy, status = 200) {
  if (signedIn.session.cookieToken) {
    reply.setCookie(SESSION_COOKIE, signedIn.session.cookieToken, {
      httpOnly: true,
      sameSite: 'lax',
      secure: cookie.secure,
      path: '/',
      expires: signedIn.session.sessionExpiresAt,
    });
  }
  return reply.code(status).send(tokenView(signedIn));
}
