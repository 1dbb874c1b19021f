/**
 * Recordings over HTTP: `GET /api/v1/calls/{call_id}/recording` for the call's owner, and
 * `GET /api/v1/recordings/{call_id}?expires=&signature=` for whoever holds the signed URL of an
 * end-of-call webhook (no credentials). Both serve `audio/wav` with byte ranges: one `Range: bytes=`
 * range answers 206 with `Content-Range`, one past the end 416; any other Range header is ignored and
 * the whole file served, as HTTP allows.
 */
import type { Readable } from 'node:stream';
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { errors } from '../../http/responses.js';
import { ErrorBody, IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import {
  type RangeRequest,
  type RecordingService,
  type RecordingStream,
  UnsatisfiableRange,
} from './service.js';

const tags = ['calls'];

const Wav = {
  'audio/wav': {
    schema: Type.Unsafe<Readable>({ type: 'string', format: 'binary', description: 'Stereo 16-bit PCM WAV' }),
  },
};

const AUDIO_RESPONSES = {
  200: {
    description:
      'The whole recording: a stereo WAV file (left channel the caller, right the assistant), 16-bit PCM at the call’s sample rate',
    content: Wav,
  },
  206: { description: 'The byte range asked for (Content-Range says which)', content: Wav },
  416: {
    ...ErrorBody,
    description: 'The range lies past the recording’s end (Content-Range: bytes */{size})',
  },
};

const RangeHeaders = Type.Object({
  range: Type.Optional(
    Type.String({ description: 'One byte range: `bytes=0-1023`, `bytes=1024-` or `bytes=-4096`' }),
  ),
});

/** One `bytes=` range; undefined for none, several, or one that cannot be read (the whole file is served). */
export function rangeOf(header: string | undefined): RangeRequest | undefined {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header?.trim() ?? '');
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') return { suffix: Number(match[2]) };
  const start = Number(match[1]);
  if (match[2] === '') return { start };
  const end = Number(match[2]);
  return end < start ? undefined : { start, end };
}

/** Opens the recording; a range past its end becomes the 416 answer with the size in Content-Range. */
async function opened(open: () => Promise<RecordingStream>): Promise<RecordingStream> {
  try {
    return await open();
  } catch (error) {
    if (error instanceof UnsatisfiableRange)
      throw new AppError(416, error.message, { 'Content-Range': `bytes */${error.size}` });
    throw error;
  }
}

/** The status and headers of a recording's answer: 206 with Content-Range for a range, else 200. */
function answerOf(recording: RecordingStream, callId: number) {
  const headers: Record<string, string | number> = {
    'Content-Type': recording.contentType,
    'Accept-Ranges': 'bytes',
    'Content-Disposition': `inline; filename="call-${callId}.wav"`,
    'Cache-Control': 'private, no-store',
  };
  if (!recording.range)
    return { status: 200 as const, headers: { ...headers, 'Content-Length': recording.size } };
  const { start, end } = recording.range;
  return {
    status: 206 as const,
    headers: {
      ...headers,
      'Content-Range': `bytes ${start}-${end}/${recording.size}`,
      'Content-Length': end - start + 1,
    },
  };
}

export function recordingRoutes(app: App, recordings: RecordingService): void {
  app.get(
    '/api/v1/calls/:call_id/recording',
    {
      config: { access: access.area('calls') },
      schema: {
        tags,
        operationId: 'getCallRecording',
        summary: "The call's recording (audio/wav; byte ranges supported)",
        description:
          'Both sides of the call in one stereo WAV file: the caller on the left channel, the assistant on ' +
          'the right. `Range: bytes=…` fetches part of it (206). 404 when the call is not your ' +
          "organization's, was not recorded, is still being recorded (ready shortly after the call ends) " +
          'or its recording failed — the detail says which.',
        params: IdParam('call_id'),
        headers: RangeHeaders,
        response: {
          ...AUDIO_RESPONSES,
          ...errors({
            404: 'Call not found in your organization, no recording, still recording, or the recording failed',
          }),
        },
      },
    },
    async (request, reply) => {
      const { call_id: callId } = request.params;
      const recording = await opened(() =>
        recordings.open(principalOf(request).tenant, callId, rangeOf(request.headers.range)),
      );
      const { status, headers } = answerOf(recording, callId);
      return reply.code(status).headers(headers).send(recording.body);
    },
  );

  app.get(
    '/api/v1/recordings/:call_id',
    {
      config: { access: access.public },
      schema: {
        tags,
        operationId: 'getSignedRecording',
        summary: 'A call recording through the signed URL of an end-of-call webhook (no credentials)',
        description:
          'The `recording_url` of a call event: valid for RECORDING_URL_TTL_HOURS (24 h by default) after ' +
          'the event. 403 when the link has expired or was altered. Byte ranges as for ' +
          '`GET /api/v1/calls/{call_id}/recording`.',
        params: IdParam('call_id'),
        querystring: Type.Object({
          expires: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
          signature: Type.String({ minLength: 1, maxLength: 200 }),
        }),
        headers: RangeHeaders,
        response: {
          ...AUDIO_RESPONSES,
          ...errors({
            403: 'The link has expired or is not valid',
            404: 'No recording (any more), still recording, or the recording failed',
          }),
        },
      },
    },
    async (request, reply) => {
      const { call_id: callId } = request.params;
      const { expires, signature } = request.query;
      const recording = await opened(() =>
        recordings.openSigned(callId, expires, signature, rangeOf(request.headers.range)),
      );
      const { status, headers } = answerOf(recording, callId);
      return reply.code(status).headers(headers).send(recording.body);
    },
  );
}
