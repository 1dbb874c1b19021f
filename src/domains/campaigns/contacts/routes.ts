/**
 * Campaign contacts: `POST /api/v1/campaigns/{id}/contacts` (JSON), `POST …/import-data` (a CSV or
 * JSON file, multipart) and `GET …/contacts` (pages, status filter). The import route lives in a
 * scope of its own where `@fastify/multipart` is registered: the upload streams to a temporary file
 * (at most CONTACT_IMPORT_MAX_BYTES, else 413) with its form fields in any order, then the service
 * reads that file as a stream.
 */

import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import fastifyMultipart from '@fastify/multipart';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { access } from '../../../http/access.js';
import { principalOf } from '../../../http/auth.js';
import { acceptFormField, refusedFilePart } from '../../../http/multipart-form.js';
import { PageQuery, PaginationOut, pageOf, paginationView } from '../../../http/pagination.js';
import { errors } from '../../../http/responses.js';
import { IdParam } from '../../../http/schemas.js';
import type { App } from '../../../http/types.js';
import { Nullable } from '../../../lib/schema.js';
import {
  badRequest,
  type DomainError,
  tooLarge,
  unsupported,
  ValidationFailed,
  type ValidationIssue,
} from '../../errors.js';
import { CONTACT_COLUMNS, type UploadedFile } from './files.js';
import { MAX_REPORTED_ERRORS } from './report.js';
import { type CampaignContactService, type ContactInput, EDITABLE_STATUSES } from './service.js';
import { ContactOut, ContactStatus, contactView } from './views.js';

const tags = ['campaigns'];
const params = IdParam('campaign_id');

const Region = Type.String({
  minLength: 2,
  maxLength: 2,
  description: 'Region of numbers written without a country code (default: DEFAULT_PHONE_REGION, US)',
});
const CustomValue = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

const ContactIn = Type.Object(
  {
    phone_number: Type.String({ description: 'Any common format; stored as E.164' }),
    name: Type.Optional(Nullable(Type.String())),
    email: Type.Optional(Nullable(Type.String())),
    company: Type.Optional(Nullable(Type.String())),
    custom_fields: Type.Optional(
      Type.Object(
        {},
        { additionalProperties: CustomValue, description: 'Template variables of the contact' },
      ),
    ),
  },
  { additionalProperties: false },
);

const ContactsBody = Type.Object(
  {
    contacts: Type.Array(ContactIn, { minItems: 1, maxItems: 10_000 }),
    default_region: Type.Optional(Region),
  },
  { additionalProperties: false },
);

type ContactsInput = { contacts: ContactInput[]; default_region?: string };

const ImportReportOut = Type.Object(
  {
    imported: Type.Integer({ description: 'Contacts added' }),
    duplicates: Type.Integer({
      description: 'Rows whose number the campaign already had, or that came earlier in the same import',
    }),
    invalid: Type.Integer({ description: 'Rows that could not be a contact (bad phone number, email…)' }),
    errors: Type.Array(Type.Object({ row: Type.Integer(), detail: Type.String() }), {
      description: `The duplicate and invalid rows, in row order (1 = the first data row), at most the first ${MAX_REPORTED_ERRORS}; the counts are always complete`,
    }),
  },
  { title: 'ContactImportReport' },
);

const ImportForm = Type.Object(
  {
    file: Type.String({
      format: 'binary',
      description:
        'CSV (header row first; comma, semicolon or tab) or JSON (an array of objects), UTF-8, at most CONTACT_IMPORT_MAX_BYTES (50 MiB)',
    }),
    column_mappings: Type.Optional(
      Type.String({
        description: `JSON object: column of the file → ${CONTACT_COLUMNS.join(', ')}, custom_fields.<name>, or null to leave it out`,
      }),
    ),
    default_region: Type.Optional(Region),
  },
  { title: 'ContactImportForm' },
);

const FORM_FIELDS = new Set(['column_mappings', 'default_region']);

const editable = `Contacts can be added while the campaign is ${EDITABLE_STATUSES.join(', ')} (409 otherwise).`;

export async function campaignContactRoutes(
  app: App,
  contacts: CampaignContactService,
  options: { maxFileBytes: number },
): Promise<void> {
  const config = { access: access.area('campaigns') };

  app.post(
    '/api/v1/campaigns/:campaign_id/contacts',
    {
      config,
      schema: {
        operationId: 'addCampaignContacts',
        tags,
        summary: 'Add contacts; numbers the campaign has already are counted as duplicates',
        description: `${editable} Each contact is checked on its own: a bad phone number or email makes its row invalid without refusing the others.`,
        params,
        body: ContactsBody,
        response: {
          200: ImportReportOut,
          ...errors({
            404: 'Campaign not found in your organization',
            409: "Contacts cannot be added in the campaign's current status",
          }),
        },
      },
    },
    async (request) =>
      contacts.add(principalOf(request), request.params.campaign_id, request.body as ContactsInput),
  );

  app.get(
    '/api/v1/campaigns/:campaign_id/contacts',
    {
      config,
      schema: {
        operationId: 'listCampaignContacts',
        tags,
        summary: "The campaign's contacts in the order they were added",
        params,
        querystring: Type.Object({ ...PageQuery, status: Type.Optional(ContactStatus) }),
        response: {
          200: Type.Object({ contacts: Type.Array(ContactOut), pagination: PaginationOut }),
          ...errors({ 404: 'Campaign not found in your organization' }),
        },
      },
    },
    async (request) => {
      const page = pageOf(request.query);
      const { rows, total } = await contacts.list(
        principalOf(request),
        request.params.campaign_id,
        page,
        request.query.status,
      );
      return { contacts: rows.map(contactView), pagination: paginationView(page, total) };
    },
  );

  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    await scope.register(fastifyMultipart, {
      limits: {
        fileSize: options.maxFileBytes,
        files: 1,
        fields: 10,
        fieldSize: 64 * 1024,
        parts: 12,
        headerPairs: 100,
      },
    });
    scope.post(
      '/api/v1/campaigns/:campaign_id/import-data',
      {
        config,
        schema: {
          operationId: 'importCampaignContacts',
          tags,
          summary: 'Import contacts from a CSV or JSON file (multipart/form-data)',
          description: `${editable} Headers are recognised (phone, phone_number, mobile, cell, telephone, number; name, full_name, first_name + last_name; email, e-mail; company, organization, business…); other columns become custom fields and template variables. All or nothing: a file that cannot be read imports no row.`,
          consumes: ['multipart/form-data'],
          params,
          body: ImportForm,
          response: {
            200: ImportReportOut,
            ...errors({
              400: 'The multipart form could not be read',
              404: 'Campaign not found in your organization',
              409: "Contacts cannot be added in the campaign's current status",
              413: 'The file, or the form, is larger than an import accepts',
              415: 'Send the file as multipart/form-data, in a field named "file"',
            }),
          },
        },
        // The form is read as a stream in the handler; its schema is here for the documentation.
        validatorCompiler: (route) =>
          route.httpPart === 'body' ? () => true : scope.validatorCompiler!(route),
      },
      async (request) => {
        const principal = principalOf(request);
        const campaignId = request.params.campaign_id;
        await contacts.assertEditable(principal, campaignId);
        const directory = await mkdtemp(path.join(tmpdir(), 'switchboard-import-'));
        try {
          const form = await receiveForm(request, directory, options.maxFileBytes);
          return await contacts.importFile(principal, campaignId, form.file, {
            columnMappings: form.fields.column_mappings,
            defaultRegion: form.fields.default_region,
          });
        } finally {
          await rm(directory, { recursive: true, force: true });
        }
      },
    );
  });
}

/** The `file` part written to `directory`, and the text fields; 422 for a form we cannot use. */
async function receiveForm(
  request: FastifyRequest,
  directory: string,
  maxBytes: number,
): Promise<{ file: UploadedFile; fields: Record<string, string> }> {
  if (!request.isMultipart())
    throw unsupported('Send the file as multipart/form-data, in a field named "file"');
  const fields: Record<string, string> = {};
  const issues: ValidationIssue[] = [];
  let file: UploadedFile | undefined;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (refusedFilePart(part, issues)) continue;
        const target = path.join(directory, 'upload');
        await pipeline(part.file, createWriteStream(target));
        if (part.file.truncated) throw fileTooLarge(maxBytes);
        file = {
          path: target,
          filename: part.filename ?? '',
          mimetype: part.mimetype ?? '',
        };
      } else {
        acceptFormField(part, FORM_FIELDS, fields, issues);
      }
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw fileTooLarge(maxBytes);
    if (code === 'FST_FILES_LIMIT')
      throw new ValidationFailed([{ loc: ['body', 'file'], msg: 'Send one file', type: 'value_error' }]);
    if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT')
      throw tooLarge('The form has too many fields');
    // Multipart errors: the plugin's own (FST_…), and busboy's on a malformed body (no code at all).
    const malformed =
      typeof code === 'string'
        ? code.startsWith('FST_')
        : error instanceof Error && error.constructor === Error;
    if (malformed) throw badRequest('The multipart form could not be read');
    throw error;
  }
  if (!file) issues.push({ loc: ['body', 'file'], msg: 'Field required', type: 'missing' });
  if (issues.length > 0) throw new ValidationFailed(issues);
  return { file: file!, fields };
}

function fileTooLarge(maxBytes: number): DomainError {
  return tooLarge(`The file is larger than the ${maxBytes} bytes an import accepts`);
}
