/**
 * An assistant's knowledge-base documents over HTTP: upload (multipart, in a scope of its own where
 * `@fastify/multipart` is registered; the file streams to storage as it arrives), list, read, status,
 * delete and re-process. Reading needs any member, or an API key with the assistants area; writing
 * what writing an assistant needs. Another organization's assistant, or a document of another
 * assistant, is 404.
 */
import fastifyMultipart from '@fastify/multipart';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { acceptFormField, refusedFilePart } from '../../http/multipart-form.js';
import { PageQuery, PaginationOut, pageOf, paginationView } from '../../http/pagination.js';
import { errors, noContent } from '../../http/responses.js';
import { Id } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { badRequest, tooLarge, unsupported, ValidationFailed, type ValidationIssue } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import type { DocumentFields, KnowledgeService, StoredFile } from './service.js';
import { DocumentOut, DocumentStatusOut, documentStatusView, documentView } from './views.js';

const tags = ['knowledge'];
const AssistantParams = Type.Object({ assistant_id: Id });
const DocumentParams = Type.Object({ assistant_id: Id, document_id: Id });
const config = { access: access.area('assistants') };
const notFound = { 404: 'Assistant or document not found in your organization' } as const;

const FORMATS_TEXT =
  'plain text (.txt), Markdown (.md), HTML (.html), PDF (.pdf) or Word (.docx); the extension (or else the content type) names the format, and the first bytes must agree';

const UploadForm = Type.Object(
  {
    file: Type.String({ format: 'binary', description: `The document: ${FORMATS_TEXT}` }),
    name: Type.Optional(Type.String({ maxLength: 255, description: 'Default: the file’s name' })),
    category: Type.Optional(Type.String({ maxLength: 100 })),
    tags: Type.Optional(
      Type.String({
        description:
          'Comma-separated (`faq, billing`) or a JSON array string (`["faq","billing"]`); at most 20 tags of at most 50 characters',
      }),
    ),
    auto_process: Type.Optional(
      Type.Boolean({
        description: 'Process now (true) or leave it `pending` (false); default: rag_settings.auto_process',
      }),
    ),
  },
  { title: 'KnowledgeDocumentUpload' },
);

const FORM_FIELDS = new Set(['name', 'category', 'tags', 'auto_process']);

export async function knowledgeRoutes(
  app: App,
  knowledge: KnowledgeService,
  options: { maxUploadBytes: number },
): Promise<void> {
  app.get(
    '/api/v1/assistants/:assistant_id/documents',
    {
      config,
      schema: {
        operationId: 'listKnowledgeDocuments',
        tags,
        summary: "The assistant's documents, newest first",
        params: AssistantParams,
        querystring: Type.Object({
          ...PageQuery,
          include_processing: Type.Optional(
            Type.Boolean({
              default: true,
              description:
                'true (default): every document, whatever its status, so one just uploaded shows; false: only `completed` ones (those retrieval uses)',
            }),
          ),
        }),
        response: {
          200: Type.Object({ documents: Type.Array(DocumentOut), pagination: PaginationOut }),
          ...errors({ 404: 'Assistant not found in your organization' }),
        },
      },
    },
    async (request) => {
      const page = pageOf(request.query);
      const { rows, total } = await knowledge.list(principalOf(request), request.params.assistant_id, page, {
        includeProcessing: request.query.include_processing ?? true,
      });
      return { documents: rows.map(documentView), pagination: paginationView(page, total) };
    },
  );

  app.get(
    '/api/v1/assistants/:assistant_id/documents/:document_id',
    {
      config,
      schema: {
        operationId: 'getKnowledgeDocument',
        tags,
        summary: 'One document, with its processing status',
        params: DocumentParams,
        response: { 200: DocumentOut, ...errors(notFound) },
      },
    },
    async (request) => {
      const { assistant_id: assistantId, document_id: documentId } = request.params;
      return documentView(await knowledge.get(principalOf(request), assistantId, documentId));
    },
  );

  app.get(
    '/api/v1/assistants/:assistant_id/documents/:document_id/status',
    {
      config,
      schema: {
        operationId: 'getKnowledgeDocumentStatus',
        tags,
        summary: "A document's processing: status, chunks processed of total, progress in percent",
        description:
          '`pending` (waiting for its job, or for a re-process with auto_process off) → `processing` → `completed` or `failed` (`error` says why). `notice` says when the document is found by words only.',
        params: DocumentParams,
        response: { 200: DocumentStatusOut, ...errors(notFound) },
      },
    },
    async (request) => {
      const { assistant_id: assistantId, document_id: documentId } = request.params;
      return documentStatusView(await knowledge.get(principalOf(request), assistantId, documentId));
    },
  );

  app.delete(
    '/api/v1/assistants/:assistant_id/documents/:document_id',
    {
      config,
      schema: {
        operationId: 'deleteKnowledgeDocument',
        tags,
        summary: 'Delete a document, its passages and its stored file',
        params: DocumentParams,
        response: { 204: Type.Null({ description: 'Deleted' }), ...errors(notFound) },
      },
    },
    async (request, reply) => {
      const { assistant_id: assistantId, document_id: documentId } = request.params;
      await knowledge.remove(principalOf(request), assistantId, documentId);
      return noContent(reply);
    },
  );

  app.post(
    '/api/v1/assistants/:assistant_id/documents/:document_id/reprocess',
    {
      config,
      schema: {
        operationId: 'reprocessKnowledgeDocument',
        tags,
        summary: "Process the document again with the assistant's current rag_settings",
        description:
          'Its passages are replaced: the old ones are deleted at once, the new ones appear as the job runs (whatever auto_process says). Use it after adding an embeddings key.',
        params: DocumentParams,
        response: { 202: DocumentOut, ...errors(notFound) },
      },
    },
    async (request, reply) => {
      const { assistant_id: assistantId, document_id: documentId } = request.params;
      const row = await knowledge.reprocess(principalOf(request), assistantId, documentId);
      return reply.code(202).send(documentView(row));
    },
  );

  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    await scope.register(fastifyMultipart, {
      // One byte past the limit is read, so the service can tell "exactly the limit" from "more".
      limits: {
        fileSize: options.maxUploadBytes + 1,
        files: 1,
        fields: 8,
        fieldSize: 16 * 1024,
        parts: 10,
        headerPairs: 100,
      },
    });
    scope.post(
      '/api/v1/assistants/:assistant_id/documents/upload',
      {
        config,
        schema: {
          operationId: 'uploadKnowledgeDocument',
          tags,
          summary: 'Upload a document to the assistant’s knowledge base (multipart/form-data)',
          description: `Formats: ${FORMATS_TEXT}. At most KNOWLEDGE_MAX_UPLOAD_BYTES (20 MiB by default). The file is stored as it arrives, then processed by a job (status \`pending\` → \`processing\` → \`completed\`/\`failed\`; follow …/status) unless auto_process is off.`,
          consumes: ['multipart/form-data'],
          params: AssistantParams,
          body: UploadForm,
          response: {
            201: DocumentOut,
            ...errors({
              400: 'No file, an empty file, or a multipart form that cannot be read',
              404: 'Assistant not found in your organization',
              413: 'The file is larger than KNOWLEDGE_MAX_UPLOAD_BYTES (the detail names the limit), or the form has too many fields',
              415: 'Not multipart/form-data, or a file type that is not accepted (the detail says why)',
              422: 'A form field breaks a rule (tags, name, category, auto_process)',
            }),
          },
        },
        // The form is read as a stream in the handler; its schema is here for the documentation.
        validatorCompiler: (route) =>
          route.httpPart === 'body' ? () => true : scope.validatorCompiler!(route),
      },
      async (request, reply) => {
        const principal = principalOf(request);
        const assistantId = request.params.assistant_id;
        if (!request.isMultipart())
          throw unsupported('Send the document as multipart/form-data, in a field named "file"');
        await knowledge.assertAssistant(principal, assistantId);
        const { stored, fields } = await receiveUpload(
          request,
          knowledge,
          principal,
          assistantId,
          options.maxUploadBytes,
        );
        const row = await knowledge.createDocument(principal, assistantId, stored, fields);
        return reply.code(201).send(documentView(row));
      },
    );
  });
}

/** Streams the `file` part to storage and reads the fields around it; a stored file is removed on refusal. */
async function receiveUpload(
  request: FastifyRequest,
  knowledge: KnowledgeService,
  principal: Principal,
  assistantId: number,
  maxUploadBytes: number,
): Promise<{ stored: StoredFile; fields: DocumentFields }> {
  const values: Record<string, string> = {};
  const issues: ValidationIssue[] = [];
  let stored: StoredFile | undefined;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (refusedFilePart(part, issues)) continue;
        stored = await knowledge.storeFile(principal, assistantId, {
          fileName: part.filename ?? '',
          contentType: part.mimetype ?? '',
          body: part.file,
        });
      } else {
        acceptFormField(part, FORM_FIELDS, values, issues);
      }
    }
  } catch (error) {
    if (stored) await knowledge.discardFile(stored);
    throw formError(error, maxUploadBytes);
  }
  const autoProcess = values.auto_process === undefined ? undefined : booleanOf(values.auto_process);
  if (autoProcess === null)
    issues.push({
      loc: ['body', 'auto_process'],
      msg: 'auto_process must be true or false',
      type: 'bool_parsing',
    });
  if (!stored) {
    throw new ValidationFailed(
      [...issues, { loc: ['body', 'file'], msg: 'Field required', type: 'missing' }],
      400,
    );
  }
  if (issues.length > 0) {
    await knowledge.discardFile(stored);
    throw new ValidationFailed(issues);
  }
  return {
    stored,
    fields: {
      ...(values.name !== undefined ? { name: values.name } : {}),
      ...(values.category !== undefined ? { category: values.category } : {}),
      ...(values.tags !== undefined ? { tags: values.tags } : {}),
      ...(autoProcess !== undefined && autoProcess !== null ? { autoProcess } : {}),
    },
  };
}

function booleanOf(text: string): boolean | null {
  const value = text.trim().toLowerCase();
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  return null;
}

/** The multipart plugin's and busboy's errors in the API's words; the domain's own pass as they are. */
function formError(error: unknown, maxUploadBytes: number): unknown {
  const code = (error as { code?: unknown }).code;
  if (code === 'FST_REQ_FILE_TOO_LARGE')
    return tooLarge(
      `The file is larger than the ${maxUploadBytes} bytes (KNOWLEDGE_MAX_UPLOAD_BYTES) a document may have`,
    );
  if (code === 'FST_FILES_LIMIT')
    return new ValidationFailed([{ loc: ['body', 'file'], msg: 'Send one file', type: 'value_error' }], 400);
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT')
    return tooLarge('The form has too many fields');
  const malformed =
    typeof code === 'string'
      ? code.startsWith('FST_')
      : error instanceof Error && error.constructor === Error;
  return malformed ? badRequest('The multipart form could not be read') : error;
}
