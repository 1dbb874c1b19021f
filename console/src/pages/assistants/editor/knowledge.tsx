/**
 * Knowledge: how the assistant's documents are split and searched (rag_settings), its documents
 * (status followed while they are processed, uploaded, re-processed, deleted), and a search box that
 * shows the passages a live turn would retrieve for a question.
 */
import { useEffect, useId, useState } from 'preact/hooks';
import type { components } from '../../../../../clients/typescript/src/index.js';
import { api, ok } from '../../../lib/api.js';
import { useLoad } from '../../../lib/load.js';
import { Button, FormError, TextField, useSubmit } from '../../../ui/form.js';
import { Empty, Loading, Panel, when } from '../../../ui/page.js';
import { Every, Group } from './group.js';

type Document = components['schemas']['KnowledgeDocument'];
type SearchResult = components['schemas']['KnowledgeSearchResult'];

export function KnowledgeSettingsGroup() {
  return (
    <Group title="Knowledge settings" id="knowledge-settings">
      <Every object="rag_settings" labels={{ enabled: 'Knowledge enabled' }} />
    </Group>
  );
}

const UNSETTLED = new Set(['pending', 'processing']);

function Upload(props: { assistantId: number; onUploaded(): void }) {
  const id = useId();
  const [file, setFile] = useState<File | undefined>();
  const [name, setName] = useState('');
  const form = useSubmit(async () => {
    if (!file) throw new Error('Choose a file to upload');
    const data = new FormData();
    data.append('file', file);
    if (name.trim()) data.append('name', name.trim());
    await ok(
      api.POST('/api/v1/assistants/{assistant_id}/documents/upload', {
        params: { path: { assistant_id: props.assistantId } },
        // The typed body is the form's fields; the browser writes the multipart framing itself.
        body: data as never,
        bodySerializer: (body) => body as unknown as FormData,
      }),
    );
    setName('');
    props.onUploaded();
  });
  return (
    <form onSubmit={form.submit} noValidate aria-label="Upload a document">
      <FormError error={form.error} />
      <div class="row">
        <div class="field">
          <label for={id}>Document file</label>
          <input
            id={id}
            type="file"
            aria-describedby={`${id}-help`}
            onChange={(event) => setFile(event.currentTarget.files?.[0])}
          />
          <p class="help" id={`${id}-help`}>
            PDF, Word, text, Markdown, HTML or CSV; processed into passages after upload.
          </p>
        </div>
        <TextField
          label="Document name"
          value={name}
          onValue={setName}
          help="Default: the file's name."
          error={form.at('name')}
        />
      </div>
      <Button type="submit" busy={form.busy}>
        Upload
      </Button>
    </form>
  );
}

function DocumentRow(props: { assistantId: number; document: Document; onChanged(): void }) {
  const { document: doc, assistantId } = props;
  const [error, setError] = useState<Error | undefined>();
  const path = { assistant_id: assistantId, document_id: doc.id };
  const act = (call: () => Promise<unknown>) => call().then(props.onChanged, setError);
  return (
    <tr>
      <td>{doc.name}</td>
      <td>
        <span class="document-status">{doc.status}</span>
        {UNSETTLED.has(doc.status) ? ` (${doc.progress}%)` : ''}
        {doc.error ? <p class="field-error">{doc.error}</p> : null}
        {doc.notice ? <p class="help">{doc.notice}</p> : null}
        {error ? <p class="field-error">{error.message}</p> : null}
      </td>
      <td>{doc.total_chunks ?? '—'}</td>
      <td>{when(doc.created_at)}</td>
      <td class="actions">
        <Button
          aria-label={`Reprocess ${doc.name}`}
          onClick={() =>
            act(() =>
              ok(
                api.POST('/api/v1/assistants/{assistant_id}/documents/{document_id}/reprocess', {
                  params: { path },
                }),
              ),
            )
          }
        >
          Reprocess
        </Button>
        <Button
          kind="danger"
          aria-label={`Delete ${doc.name}`}
          onClick={() => {
            if (!confirm(`Delete the document ${doc.name}?`)) return;
            act(() =>
              ok(
                api.DELETE('/api/v1/assistants/{assistant_id}/documents/{document_id}', { params: { path } }),
              ),
            );
          }}
        >
          Delete
        </Button>
      </td>
    </tr>
  );
}

function Documents(props: { assistantId: number }) {
  const { assistantId } = props;
  const list = useLoad(
    () =>
      ok(
        api.GET('/api/v1/assistants/{assistant_id}/documents', {
          params: { path: { assistant_id: assistantId }, query: { per_page: 100 } },
        }),
      ).then((page) => page.documents),
    [assistantId],
  );
  // While a document is being processed, its status is read again every second.
  const unsettled = (list.data ?? []).some((doc) => UNSETTLED.has(doc.status));
  useEffect(() => {
    if (!unsettled) return;
    const timer = setInterval(list.reload, 1000);
    return () => clearInterval(timer);
  }, [unsettled]);
  return (
    <>
      <Loading loaded={list}>
        {(documents) =>
          documents.length === 0 ? (
            <Empty>No document yet: upload one for the assistant to answer from.</Empty>
          ) : (
            <table>
              <caption class="visually-hidden">Documents</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Passages</th>
                  <th scope="col">Added</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {documents.map((doc) => (
                  <DocumentRow
                    key={doc.id}
                    assistantId={assistantId}
                    document={doc}
                    onChanged={list.reload}
                  />
                ))}
              </tbody>
            </table>
          )
        }
      </Loading>
      <Upload assistantId={assistantId} onUploaded={list.reload} />
    </>
  );
}

function Search(props: { assistantId: number }) {
  const [query, setQuery] = useState('');
  const [result, setResult] = useState<SearchResult | undefined>();
  const form = useSubmit(async () => {
    setResult(
      await ok(
        api.POST('/api/v1/assistants/{assistant_id}/knowledge/search', {
          params: { path: { assistant_id: props.assistantId } },
          body: { query },
        }),
      ),
    );
  });
  return (
    <form onSubmit={form.submit} noValidate aria-label="Search the knowledge">
      <FormError error={form.error} />
      <TextField
        label="Question"
        type="search"
        value={query}
        onValue={setQuery}
        help="Finds the passages a call would retrieve for this question, with the assistant's settings."
        error={form.at('query')}
      />
      <Button type="submit" busy={form.busy}>
        Search
      </Button>
      {result ? (
        <div role="status" class="search-hits">
          <p>
            {result.passages.length === 0
              ? 'Nothing found.'
              : `${result.passages.length} passage${result.passages.length === 1 ? '' : 's'} found (${result.mode === 'hybrid' ? 'by meaning and words' : 'by words only'}).`}
            {result.notice ? ` ${result.notice}` : ''}
          </p>
          <ol>
            {result.passages.map((passage) => (
              <li key={passage.chunk_id}>
                <blockquote>{passage.content}</blockquote>
                <p class="help">
                  {passage.document_name ?? 'A document'} · score {passage.score.toFixed(3)}
                  {passage.similarity === null ? '' : ` · similarity ${passage.similarity.toFixed(2)}`}
                </p>
              </li>
            ))}
          </ol>
        </div>
      ) : null}
    </form>
  );
}

export function KnowledgeDocuments(props: { assistantId: number }) {
  return (
    <>
      <Panel title="Knowledge documents" id="knowledge">
        <Documents assistantId={props.assistantId} />
      </Panel>
      <Panel title="Search the knowledge" id="knowledge-search">
        <Search assistantId={props.assistantId} />
      </Panel>
    </>
  );
}
