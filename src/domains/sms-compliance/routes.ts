/**
 * /v1/sms-compliance: submitting the organization's phone numbers for outbound SMS review, their
 * status, and the admin review. Every route takes only a JWT bearer access token (platform-api
 * Authentication): API keys and cookie-only sessions are refused with 403.
 */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors } from '../../http/responses.js';
import { Id, IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { literalUnion, Nullable } from '../../lib/schema.js';
import { SAMPLE_MESSAGE_LENGTH, type SmsComplianceService, stateOf, USE_CASES } from './service.js';
import { State, Status, StatusOut, statusView } from './views.js';

const tags = ['sms-compliance'];
const UseCase = literalUnion(USE_CASES);
/** Some non-space character. */
const NOT_BLANK = '\\S';

const Submission = Type.Object(
  {
    phone_number_id: Id,
    use_case: UseCase,
    business_name: Type.String({ minLength: 1, maxLength: 200, pattern: NOT_BLANK }),
    business_description: Type.String({ minLength: 1, maxLength: 2000, pattern: NOT_BLANK }),
    sample_messages: Type.Array(
      Type.String({ minLength: SAMPLE_MESSAGE_LENGTH.min, maxLength: SAMPLE_MESSAGE_LENGTH.max }),
      { minItems: 1, maxItems: 3, description: '1 to 3 messages of the kind the number will send' },
    ),
    website_url: Type.Optional(
      Nullable(Type.String({ format: 'uri', pattern: '^https?://[^/?#\\s]+', maxLength: 2048 })),
    ),
    contact_email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 254 }))),
  },
  { additionalProperties: false },
);

const CanSendOut = Type.Object(
  { can_send: Type.Boolean(), reason: Type.String(), status: State },
  { title: 'SmsComplianceCanSend' },
);

const SummaryOut = Type.Object(
  {
    total_numbers: Type.Integer(),
    approved: Type.Integer(),
    pending: Type.Integer(),
    rejected: Type.Integer(),
    not_submitted: Type.Integer(),
    numbers: Type.Array(
      Type.Object({
        phone_number_id: Type.Integer(),
        phone_number: Type.String(),
        status: State,
        use_case: Nullable(Type.String()),
      }),
    ),
  },
  { title: 'SmsComplianceSummary' },
);

export function smsComplianceRoutes(app: App, compliance: SmsComplianceService): void {
  const config = { access: access.jwtOnly };

  app.get(
    '/v1/sms-compliance/status/:phone_number_id',
    {
      config,
      schema: {
        operationId: 'getSmsComplianceStatus',
        tags,
        summary: "A number's SMS compliance status (found: false when it was never submitted)",
        params: IdParam('phone_number_id'),
        response: { 200: StatusOut, ...errors({ 404: 'Phone number not found in your organization' }) },
      },
    },
    async (request) =>
      statusView(await compliance.status(principalOf(request), request.params.phone_number_id)),
  );

  app.post(
    '/v1/sms-compliance/submit',
    {
      config,
      schema: {
        operationId: 'submitSmsCompliance',
        tags,
        summary:
          'Submit a number for review; a pending or rejected submission is replaced and back to pending, an approved one answers 409',
        body: Submission,
        response: {
          200: StatusOut,
          ...errors({
            404: 'Phone number not found in your organization',
            409: 'Already approved: an admin must set it back to pending first',
          }),
        },
      },
    },
    async (request) => statusView(await compliance.submit(principalOf(request), request.body)),
  );

  app.get(
    '/v1/sms-compliance/can-send/:phone_number_id',
    {
      config,
      schema: {
        operationId: 'getSmsCanSend',
        tags,
        summary: 'Whether the number may send outbound SMS (only when approved), and why',
        params: IdParam('phone_number_id'),
        response: { 200: CanSendOut, ...errors({ 404: 'Phone number not found in your organization' }) },
      },
    },
    async (request) => compliance.canSend(principalOf(request), request.params.phone_number_id),
  );

  app.get(
    '/v1/sms-compliance/summary',
    {
      config,
      schema: {
        operationId: 'getSmsComplianceSummary',
        tags,
        summary: 'Every number of the organization with its status (never submitted: not_submitted)',
        response: { 200: SummaryOut },
      },
    },
    async (request) => {
      const summary = await compliance.summary(principalOf(request));
      return {
        total_numbers: summary.totalNumbers,
        approved: summary.approved,
        pending: summary.pending,
        rejected: summary.rejected,
        not_submitted: summary.notSubmitted,
        numbers: summary.numbers.map((n) => ({
          phone_number_id: n.phoneNumberId,
          phone_number: n.phoneNumber,
          status: stateOf(n.record),
          use_case: n.record?.useCase ?? null,
        })),
      };
    },
  );

  app.put(
    '/v1/sms-compliance/admin/status/:phone_number_id',
    {
      config: { access: { ...access.jwtOnly, role: 'admin' } },
      schema: {
        operationId: 'setSmsComplianceStatus',
        tags,
        summary:
          'Review a submitted number (admin only): approved, rejected (with rejection_reason) or back to pending',
        params: IdParam('phone_number_id'),
        querystring: Type.Object({
          new_status: Status,
          rejection_reason: Type.Optional(
            Type.String({ maxLength: 1000, description: 'Required with rejected; refused otherwise' }),
          ),
        }),
        response: {
          200: StatusOut,
          ...errors({ 404: 'Phone number not found, or it has no submission yet' }),
        },
      },
    },
    async (request) =>
      statusView(
        await compliance.setStatus(principalOf(request), request.params.phone_number_id, {
          status: request.query.new_status,
          rejectionReason: request.query.rejection_reason,
        }),
      ),
  );
}
