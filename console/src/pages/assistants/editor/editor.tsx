/**
 * The assistant editor (`/assistants/:id`): every setting of one assistant, grouped as the API nests
 * them, each with its help text and default from the API's own OpenAPI document. One save sends the
 * changed fields (PUT: a nested object given replaces the stored one) and shows the API's errors at
 * the fields they concern; the knowledge documents and search, talking to it, and deleting it.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, ok } from '../../../lib/api.js';
import { useLoad } from '../../../lib/load.js';
import { Link, navigate, type RouteParams } from '../../../lib/router.js';
import { Button, FormError, useSubmit } from '../../../ui/form.js';
import { Loading, Page, Panel } from '../../../ui/page.js';
import { CarriersGroup, CustomGroup, RecordingGroup, VoicemailGroup } from './calls.js';
import { IdleGroup, InterruptionsGroup } from './conversation.js';
import { type Assistant, changedFields, useDraft } from './draft.js';
import { EditorContext } from './field.js';
import { type FieldDocs, fieldDocs, openApiDocument } from './field-docs.js';
import { GeneralGroup } from './general.js';
import { HearingGroup } from './hearing.js';
import { KnowledgeDocuments, KnowledgeSettingsGroup } from './knowledge.js';
import { ModelGroup } from './model.js';
import { withSecrets } from './secrets.js';
import { ToolsGroup } from './tools.js';
import { VoiceGroup, withVoiceKnobsOfProvider } from './voice.js';

/** The first problem the API named at `path` or inside it (a JSON box holds a whole object). */
function problemAt(error: Error | undefined, path: string): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  return error.problems.find((p) => {
    const at = p.path.join('.');
    return at === path || at.startsWith(`${path}.`);
  })?.message;
}

function EditForm(props: { assistant: Assistant; docs: FieldDocs }) {
  const draft = useDraft(props.assistant);
  const [typed, setTyped] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState(false);
  const form = useSubmit(async () => {
    setSaved(false);
    const outgoing = withVoiceKnobsOfProvider(withSecrets(draft.saved, draft.value, typed));
    const body = changedFields(draft.saved, outgoing);
    if (Object.keys(body).length === 0) {
      setSaved(true);
      return;
    }
    const updated = await ok(
      api.PUT('/api/v1/assistants/{assistant_id}', {
        params: { path: { assistant_id: draft.saved.id } },
        body: body as never,
      }),
    );
    draft.reset(updated);
    setTyped({});
    setSaved(true);
  });
  const editor = {
    draft,
    docs: props.docs,
    at: (path: string) => problemAt(form.error, path),
    typed,
    type: (path: string, value: string) => setTyped((current) => ({ ...current, [path]: value })),
  };
  return (
    <EditorContext.Provider value={editor}>
      <form onSubmit={form.submit} noValidate aria-label="Edit the assistant">
        <nav class="editor-groups" aria-label="Setting groups">
          {[
            'general',
            'model',
            'voice',
            'hearing',
            'interruptions',
            'idle',
            'tools',
            'knowledge-settings',
            'voicemail',
            'recording',
            'carriers',
            'custom',
          ].map((id) => (
            <a key={id} href={`#${id}`}>
              {id.replace('-settings', '').replace('custom', 'structured data')}
            </a>
          ))}
        </nav>
        <GeneralGroup />
        <ModelGroup />
        <VoiceGroup />
        <HearingGroup />
        <InterruptionsGroup />
        <IdleGroup />
        <ToolsGroup />
        <KnowledgeSettingsGroup />
        <VoicemailGroup />
        <RecordingGroup />
        <CarriersGroup />
        <CustomGroup />
        <div class="save-bar">
          <FormError error={form.error} />
          <Button type="submit" kind="primary" busy={form.busy}>
            Save
          </Button>
          {saved ? <span role="status"> Saved.</span> : null}
        </div>
      </form>
    </EditorContext.Provider>
  );
}

function DeleteAssistant(props: { assistant: Assistant }) {
  const [error, setError] = useState<Error | undefined>();
  return (
    <Panel title="Delete">
      <FormError error={error} />
      <Button
        kind="danger"
        onClick={async () => {
          if (!confirm(`Delete the assistant ${props.assistant.name}?`)) return;
          setError(undefined);
          await ok(
            api.DELETE('/api/v1/assistants/{assistant_id}', {
              params: { path: { assistant_id: props.assistant.id } },
            }),
          ).then(() => navigate('/assistants'), setError);
        }}
      >
        Delete this assistant
      </Button>
    </Panel>
  );
}

export function AssistantEditor(props: { params: RouteParams }) {
  const id = Number(props.params.id);
  const loaded = useLoad(async () => {
    const [assistant, document] = await Promise.all([
      ok(api.GET('/api/v1/assistants/{assistant_id}', { params: { path: { assistant_id: id } } })),
      openApiDocument(),
    ]);
    return { assistant, docs: fieldDocs(document) };
  }, [id]);
  return (
    <Page
      title={loaded.data ? loaded.data.assistant.name : 'Assistant'}
      actions={<Link href={`/assistants/${id}/talk`}>Talk</Link>}
    >
      <p>
        <Link href="/assistants">← All assistants</Link>
      </p>
      <Loading loaded={loaded}>
        {({ assistant, docs }) => (
          <>
            <EditForm key={assistant.id} assistant={assistant} docs={docs} />
            <KnowledgeDocuments assistantId={assistant.id} />
            <DeleteAssistant assistant={assistant} />
          </>
        )}
      </Loading>
    </Page>
  );
}
