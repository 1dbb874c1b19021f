/**
 * A SIP trunk call across kill -9, for real: a server process (src/server.ts) places a campaign's call
 * through a trunk (sipp answers and waits for a BYE that never comes), is killed mid-call, and starts
 * again on the same SIP address. The new agent settles the call its previous life held — `completed`,
 * with the reason — and the campaign's attempt finishes with it, so the campaign completes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmSimulator } from '../src/sim/llm.js';
import { SttASimulator } from '../src/sim/stt-a.js';
import { TtsASimulator } from '../src/sim/tts-a.js';
import { CrashRig } from './support/crash-rig.js';
import { waitFor } from './support/harness.js';
import { freePort as freeHttpPort, type ServerProcess, serverRequest } from './support/server-process.js';
import { freePort, startSipp } from './support/sipp.js';

const stt = new SttASimulator();
const llm = new LlmSimulator();
const tts = new TtsASimulator();
const rig = new CrashRig('sip-durability');
let env: Record<string, string>;

beforeAll(async () => {
  const [sttUrl, llmUrl, ttsUrl] = await Promise.all([stt.start(), llm.start(), tts.start()]);
  await rig.setUp();
  const rtpMin = 30000 + 200 * Math.floor(Math.random() * 100);
  env = {
    STT_BASE_URL: sttUrl,
    LLM_A_BASE_URL: llmUrl,
    TTS_A_BASE_URL: ttsUrl,
    SIP_HOST: '127.0.0.1',
    SIP_PORT: String(await freePort()),
    SIP_PUBLIC_HOST: '127.0.0.1',
    RTP_PORT_MIN: String(rtpMin),
    RTP_PORT_MAX: String(rtpMin + 199),
    SIP_TRUNK_CHECK_INTERVAL_SECONDS: '3600',
  };
}, 60_000);
afterAll(async () => {
  await rig.tearDown();
  await Promise.all([stt.stop(), llm.stop(), tts.stop()]);
});

const call = serverRequest;

describe('a SIP trunk call across kill -9', () => {
  it('is settled by the agent that starts again on its address, and its campaign attempt finishes', async () => {
    const trunk = await startSipp({ scenario: 'uas_answer_play.xml', timeoutSeconds: 120 });
    try {
      const port = String(await freeHttpPort());
      const first = await rig.start(port, env);
      const registered = await call(first, 'POST', '/api/v1/auth/register', {
        body: {
          email: 'sip.durability@example.test',
          password: 'crash-and-restart',
          first_name: 'S',
          last_name: 'D',
        },
      });
      expect(registered.status, JSON.stringify(registered.body)).toBe(201);
      const token = registered.body.access_token as string;
      llm.addKey('durable-llm');
      stt.addKey('durable-stt');
      tts.addKey('durable-tts');
      const organization = await call(first, 'PUT', '/api/v1/organization', {
        token,
        body: {
          api_keys: {
            llm_a: { api_key: 'durable-llm' },
            stt_a: { api_key: 'durable-stt' },
            tts_a: { api_key: 'durable-tts' },
          },
          sip_trunk_config: { sip_domain: '127.0.0.1', port: trunk.port, transport: 'udp' },
        },
      });
      expect(organization.status, JSON.stringify(organization.body)).toBe(200);
      const assistant = await call(first, 'POST', '/api/v1/assistants', { token, body: { name: 'Durable' } });
      const number = await call(first, 'POST', '/api/v1/phone-numbers', {
        token,
        body: { phone_number: '+16285559001', provider: 'sip_trunk', assistant_id: assistant.body.id },
      });
      expect(number.status, JSON.stringify(number.body)).toBe(201);
      const created = await call(first, 'POST', '/api/v1/campaigns', {
        token,
        body: {
          name: 'Across a crash',
          campaign_type: 'call',
          assistant_id: assistant.body.id,
          max_attempts: 1,
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.id as number;
      await call(first, 'POST', `/api/v1/campaigns/${id}/contacts`, {
        token,
        body: { contacts: [{ phone_number: '+14155550199' }] },
      });
      expect((await call(first, 'POST', `/api/v1/campaigns/${id}/start`, { token })).status).toBe(200);

      // The trunk answered: the call is up, held by the first process's agent.
      const callOf = async (server: ServerProcess) => {
        const executions = await call(server, 'GET', `/api/v1/campaigns/${id}/executions`, { token });
        const [execution] = executions.body.executions as Array<Record<string, unknown>>;
        if (!execution?.call_id) return undefined;
        return {
          execution,
          call: (await call(server, 'GET', `/api/v1/calls/${execution.call_id}`, { token })).body,
        };
      };
      const live = await waitFor(async () => {
        const found = await callOf(first);
        return found?.call.status === 'in-progress' ? found : undefined;
      }, 30_000);
      expect(live.call.call_meta).toMatchObject({ sip_agent: `127.0.0.1:${env.SIP_PORT}` });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      first.child.kill('SIGKILL');
      await first.exited;

      const second = await rig.start(port, env);
      const settled = await waitFor(async () => {
        const found = await callOf(second);
        return found?.execution.status === 'completed' ? found : undefined;
      }, 30_000);
      expect(settled.call).toMatchObject({ status: 'completed' });
      expect(settled.call.duration as number).toBeGreaterThanOrEqual(1);
      expect((settled.call.call_meta as Record<string, unknown>).error).toMatch(
        /platform stopped during the call/,
      );
      const campaign = await waitFor(async () => {
        const response = await call(second, 'GET', `/api/v1/campaigns/${id}`, { token });
        return response.body.status === 'completed' ? response.body : undefined;
      }, 30_000);
      expect(campaign).toMatchObject({ completed_contacts: 1, failed_contacts: 0 });
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      trunk.kill();
    }
  }, 180_000);
});
