/**
 * Talk to an assistant from the browser: one click opens a web call (`POST /api/v1/calls/web`), the
 * microphone streams into the same runtime as phone calls (talk/web-call.ts), and the page shows the
 * conversation as it happens — the live transcript, each turn's latency as it completes, a meter of
 * the microphone — with Interrupt, a keypad and Hang up. The finished call is an ordinary call
 * record: the page links to it.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Link, type RouteParams } from '../../lib/router.js';
import { WebCall, type WebCallState } from '../../talk/web-call.js';
import { Button, FormError } from '../../ui/form.js';
import { Loading, Page, Panel } from '../../ui/page.js';
import { type LiveTurn, TurnLatencies } from './turn-latencies.js';

interface Line {
  speaker: 'user' | 'assistant';
  text: string;
  final: boolean;
}

const KEYS = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '*', '0', '#'];

/** Why a call ended, in words (the server's reasons and the browser's own). */
function endedBecause(reason: string): string {
  const known: Record<string, string> = {
    hangup: 'You hung up.',
    completed: 'The call ended.',
    assistant: 'The assistant ended the call.',
    refused: 'The platform refused the connection.',
    connection_lost: 'The connection was lost.',
    timeout: 'The platform did not answer in time.',
  };
  return known[reason] ?? `The call ended (${reason}).`;
}

/** Adds a transcript message: an interim line is replaced by what follows from the same speaker. */
function addLine(lines: Line[], line: Line): Line[] {
  const last = lines[lines.length - 1];
  if (last && !last.final && last.speaker === line.speaker) return [...lines.slice(0, -1), line];
  return [...lines, line];
}

function Meter(props: { level: number }) {
  const percent = Math.round(Math.min(1, props.level * 4) * 100);
  return <meter class="meter" aria-label="Microphone level" min={0} max={100} value={percent} />;
}

function Conversation(props: { assistantId: number }) {
  const call = useRef<WebCall | undefined>(undefined);
  const [state, setState] = useState<WebCallState>('idle');
  const [callId, setCallId] = useState<number | undefined>();
  const [lines, setLines] = useState<Line[]>([]);
  const [turns, setTurns] = useState<LiveTurn[]>([]);
  const [level, setLevel] = useState(0);
  const [speaking, setSpeaking] = useState(false);
  const [ended, setEnded] = useState<string | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const [keypad, setKeypad] = useState(false);

  // Leaving the page hangs up: the microphone is never left open behind the user's back.
  useEffect(() => () => call.current?.hangUp(), []);

  const start = async () => {
    setError(undefined);
    setEnded(undefined);
    setLines([]);
    setTurns([]);
    setState('connecting');
    try {
      const session = await ok(api.POST('/api/v1/calls/web', { body: { assistant_id: props.assistantId } }));
      setCallId(session.call.id);
      const next = new WebCall(session);
      call.current = next;
      next.on('started', () => setState('live'));
      next.on('transcript', (message) =>
        setLines((current) =>
          addLine(current, { speaker: message.speaker, text: message.text, final: message.final }),
        ),
      );
      next.on('turn', (turn) => setTurns((current) => [...current, turn as LiveTurn]));
      next.on('level', setLevel);
      next.on('playing', setSpeaking);
      next.on('error', setError);
      next.on('ended', ({ reason }) => {
        setEnded(reason);
        setState('ended');
        setSpeaking(false);
        setLevel(0);
      });
      await next.start();
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
      setState('ended');
    }
  };

  const live = state === 'live';
  return (
    <>
      <Panel title="Conversation">
        <FormError error={error} />
        <div class="talk-controls">
          {state === 'idle' || state === 'ended' ? (
            <Button kind="primary" onClick={start}>
              {state === 'ended' ? 'Talk again' : 'Start talking'}
            </Button>
          ) : (
            <>
              <Button kind="danger" onClick={() => call.current?.hangUp()} disabled={state === 'ending'}>
                Hang up
              </Button>
              <Button onClick={() => call.current?.interrupt()} disabled={!live || !speaking}>
                Interrupt
              </Button>
              <Button aria-expanded={keypad} onClick={() => setKeypad((open) => !open)} disabled={!live}>
                Keypad
              </Button>
            </>
          )}
          <span class="talk-state" role="status">
            {state === 'connecting'
              ? 'Connecting… (allow the microphone when the browser asks)'
              : live
                ? speaking
                  ? 'The assistant is speaking'
                  : 'Listening'
                : ended
                  ? endedBecause(ended)
                  : 'Press Start and speak: the assistant answers through your speakers.'}
          </span>
          {live ? <Meter level={level} /> : null}
        </div>
        {keypad && live ? (
          <fieldset class="keypad">
            <legend class="visually-hidden">Keypad</legend>
            {KEYS.map((key) => (
              <Button key={key} onClick={() => call.current?.sendDigit(key)} aria-label={`Key ${key}`}>
                {key}
              </Button>
            ))}
          </fieldset>
        ) : null}
        <ol class="transcript" aria-live="polite" aria-label="Transcript">
          {lines.map((line, index) => (
            <li key={index} class={`line ${line.speaker}${line.final ? '' : ' interim'}`}>
              <span class="speaker">{line.speaker === 'user' ? 'You' : 'Assistant'}</span> {line.text}
            </li>
          ))}
        </ol>
        {callId !== undefined && state === 'ended' ? (
          <p>
            <Link href={`/calls/${callId}`}>Open the call record</Link> (transcript, turns, recording).
          </p>
        ) : null}
      </Panel>
      <Panel title="Latency, turn by turn">
        <TurnLatencies turns={turns} />
      </Panel>
    </>
  );
}

export function Talk(props: { params: RouteParams }) {
  const assistantId = Number(props.params.id);
  const assistant = useLoad(
    () =>
      ok(api.GET('/api/v1/assistants/{assistant_id}', { params: { path: { assistant_id: assistantId } } })),
    [assistantId],
  );
  return (
    <Loading loaded={assistant}>
      {(found) => (
        <Page
          title={`Talk to ${found.name}`}
          actions={<Link href={`/assistants/${assistantId}`}>Settings</Link>}
        >
          <Conversation assistantId={assistantId} />
        </Page>
      )}
    </Loading>
  );
}
