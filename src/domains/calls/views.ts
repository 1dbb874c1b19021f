/** The JSON of a call record and of its turns: the TypeBox schemas and the functions that fill them. */
import { type Static, Type } from 'typebox';
import { CALL_STATUSES, type CallStatus, TURN_KINDS, type TurnKind } from '../../db/schema/telephony.js';
import { iso, Nullable, OpenObject, Timestamp } from '../../lib/schema.js';
import type { TurnMarks, TurnRecord } from '../../voice/turn-metrics.js';
import type { AnalysisRow } from '../analysis/reads.js';
import { AnalysisOut, analysisView } from '../analysis/views.js';
import type { CallRecordingSummary } from './records.js';
import type { CallRow } from './store.js';
import { type CallTurnRow, turnColumns } from './turns.js';

export const CallStatusSchema = Type.Unsafe<CallStatus>({ type: 'string', enum: [...CALL_STATUSES] });

export const CallOut = Type.Object(
  {
    id: Type.Integer(),
    assistant_id: Nullable(Type.Integer({ description: 'Null once the assistant is deleted' })),
    call_sid: Nullable(Type.String({ description: "The carrier's call identifier" })),
    direction: Type.Union([Type.Literal('inbound'), Type.Literal('outbound')]),
    from_phone_number: Type.String({
      description: 'Our number on outbound calls, the caller on inbound ones',
    }),
    to_phone_number: Type.String(),
    customer_phone_number: Type.String({ description: 'The other party' }),
    status: CallStatusSchema,
    call_meta: OpenObject,
    duration: Nullable(Type.Integer({ description: 'Seconds' })),
    cost: Nullable(Type.Number()),
    started_at: Nullable(Timestamp),
    ended_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
    graph_session_id: Nullable(Type.Integer()),
    campaign_id: Nullable(Type.Integer()),
    /** Only on GET /api/v1/calls/{call_id} (see its description); lists leave it out. */
    analysis: Type.Optional(Nullable(AnalysisOut)),
    recording: Type.Optional(
      Nullable(
        Type.Object(
          {
            status: Type.Union(
              [Type.Literal('recording'), Type.Literal('completed'), Type.Literal('failed')],
              {
                description:
                  '`recording` while the call runs and its file is stored, then `completed` or `failed`',
              },
            ),
            duration_ms: Nullable(
              Type.Integer({ description: 'Length of the recording (ms), once completed' }),
            ),
            bytes: Nullable(Type.Integer({ description: 'Size of the WAV file, once completed' })),
            url: Type.String({ description: 'GET it with your credentials (audio/wav, byte ranges)' }),
          },
          {
            title: 'CallRecording',
            description:
              'Only in GET /api/v1/calls/{call_id}: the call’s recording; null when it was not recorded',
          },
        ),
      ),
    ),
  },
  { title: 'Call' },
);

/** A call's recording as GET /api/v1/calls/{call_id} shows it (null when it has none). */
export function recordingView(recording: CallRecordingSummary | null) {
  return (
    recording && {
      status: recording.status,
      duration_ms: recording.durationMs,
      bytes: recording.bytes,
      url: recording.url,
    }
  );
}

/**
 * Inbound calls show the caller as `from_phone_number`; outbound ones our number. `analysis` is given
 * (a row or null) for one call, left out of lists.
 */
export function callView(call: CallRow, analysis?: AnalysisRow | null) {
  return {
    id: call.id,
    assistant_id: call.assistantId,
    call_sid: call.callSid,
    direction: call.direction,
    from_phone_number: call.direction === 'inbound' ? call.customerPhoneNumber : call.fromPhoneNumber,
    to_phone_number: call.toPhoneNumber,
    customer_phone_number: call.customerPhoneNumber,
    status: call.status,
    call_meta: call.callMeta,
    duration: call.duration,
    cost: call.cost,
    started_at: iso(call.startedAt),
    ended_at: iso(call.endedAt),
    created_at: iso(call.createdAt),
    updated_at: iso(call.updatedAt),
    graph_session_id: call.graphSessionId,
    campaign_id: call.campaignId,
    ...(analysis === undefined ? {} : { analysis: analysis ? analysisView(analysis) : null }),
  };
}

/** Milliseconds, null when the turn had no such stage (a greeting has no caller speech to wait for). */
const Ms = (description: string) => Nullable(Type.Integer({ description: `${description} (ms)` }));
/** A moment of the turn, in milliseconds since the call's live session started; absent when it did not happen. */
const Mark = (description: string) => Type.Optional(Type.Number({ description }));

export const TurnMarksOut = Type.Object(
  {
    caller_speech_started_at: Mark('The caller started speaking (voice activity)'),
    caller_speech_ended_at: Mark(
      'The caller stopped speaking (the start of the silence that ended the turn)',
    ),
    stt_final_at: Mark('The final transcript of the turn’s last words arrived'),
    turn_end_decided_at: Mark('The caller’s turn was judged over'),
    llm_request_at: Mark('The language model was asked'),
    llm_first_token_at: Mark('Its first token arrived'),
    first_sentence_at: Mark('The first sentence to speak was complete'),
    tts_request_at: Mark('The first text went to the voice'),
    tts_first_byte_at: Mark('The voice’s first audio arrived'),
    first_audio_sent_at: Mark('The first audio of the answer went to the carrier'),
    first_mark_played_at: Mark('The carrier reported that audio played'),
    retrieval_started_at: Mark('The knowledge base search for the caller’s words began'),
    retrieval_ended_at: Mark('Its passages were ready (or it was given up)'),
  },
  {
    title: 'TurnMarks',
    description:
      'Milliseconds since the call’s live session started (monotonic clock, 0.1 ms steps); a moment that did not happen is absent',
  },
);

export const TurnOut = Type.Object(
  {
    position: Type.Integer({ description: '0 for the greeting, then 1, 2, 3…' }),
    kind: Type.Unsafe<TurnKind>({ type: 'string', enum: [...TURN_KINDS] }),
    started_at: Timestamp,
    user_text: Type.String({ description: 'What the caller said (empty for a greeting or idle prompt)' }),
    assistant_text: Type.String({ description: 'What the assistant said, as far as the caller heard it' }),
    interrupted: Type.Boolean({ description: 'The caller interrupted the assistant' }),
    llm_provider: Nullable(Type.String({ description: 'The language model that answered' })),
    end_to_end_ms: Ms('Caller speech end → first audio of the answer sent'),
    endpointing_ms: Ms('Caller speech end → turn end decided'),
    stt_delay_ms: Ms('Caller speech end → final transcript'),
    llm_ttft_ms: Ms('Language model request → first token'),
    tts_ttfb_ms: Ms('Voice request → first audio'),
    platform_ms: Ms('End-to-end minus endpointing, LLM and TTS waits: what the platform itself added'),
    retrieval_ms: Ms(
      'Knowledge base search for the caller’s words (embedding and search); null when the assistant has no knowledge',
    ),
    passages: Nullable(
      Type.Array(
        Type.Object(
          {
            document_id: Type.Integer(),
            chunk_id: Type.Integer(),
            score: Type.Number({ description: 'The fused rank score it was chosen by' }),
          },
          { title: 'TurnPassage' },
        ),
        {
          description:
            'The knowledge passages the answer was given, best first; empty when the search found none, null when there was no search',
        },
      ),
    ),
    marks: TurnMarksOut,
  },
  { title: 'CallTurn' },
);

const MARK_FIELDS: ReadonlyArray<[keyof TurnMarks, keyof Static<typeof TurnMarksOut>]> = [
  ['callerSpeechStartedAt', 'caller_speech_started_at'],
  ['callerSpeechEndedAt', 'caller_speech_ended_at'],
  ['sttFinalAt', 'stt_final_at'],
  ['turnEndDecidedAt', 'turn_end_decided_at'],
  ['llmRequestAt', 'llm_request_at'],
  ['llmFirstTokenAt', 'llm_first_token_at'],
  ['firstSentenceAt', 'first_sentence_at'],
  ['ttsRequestAt', 'tts_request_at'],
  ['ttsFirstByteAt', 'tts_first_byte_at'],
  ['firstAudioSentAt', 'first_audio_sent_at'],
  ['firstMarkPlayedAt', 'first_mark_played_at'],
  ['retrievalStartedAt', 'retrieval_started_at'],
  ['retrievalEndedAt', 'retrieval_ended_at'],
];

/** A turn as stored, or as the live runtime records it (`turnRecordView`). */
type TurnFields = Omit<CallTurnRow, 'id' | 'organizationId' | 'callId' | 'createdAt'>;

/** A turn the runtime just recorded, in the fields GET /calls/{id}/turns will show it with. */
export function turnRecordView(turn: TurnRecord) {
  return turnView({ position: turn.position, ...turnColumns(turn) });
}

export function turnView(turn: TurnFields) {
  const marks: Static<typeof TurnMarksOut> = {};
  for (const [from, to] of MARK_FIELDS) {
    const at = turn.marks[from];
    if (at !== undefined) marks[to] = at;
  }
  return {
    position: turn.position,
    kind: turn.kind,
    started_at: iso(turn.startedAt),
    user_text: turn.userText,
    assistant_text: turn.assistantText,
    interrupted: turn.interrupted,
    llm_provider: turn.llmProvider,
    end_to_end_ms: turn.endToEndMs,
    endpointing_ms: turn.endpointingMs,
    stt_delay_ms: turn.sttDelayMs,
    llm_ttft_ms: turn.llmTtftMs,
    tts_ttfb_ms: turn.ttsTtfbMs,
    platform_ms: turn.platformMs,
    retrieval_ms: turn.retrievalMs,
    passages: turn.passages,
    marks,
  };
}
