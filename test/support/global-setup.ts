import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../src/db/client.js';
import { runMigrations } from '../../src/db/migrate.js';
import { JobQueue } from '../../src/queue/queue.js';
import { adminQuery, databaseUrl, type TemplateInfo, uniqueName } from './template.js';

declare module 'vitest' {
  export interface ProvidedContext {
    template: TemplateInfo;
  }
}

const silent = pino({ level: 'silent' });

export default async function setup(project: TestProject) {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (adminUrl) {
    const templateName = uniqueName('sb_template');
    await adminQuery(adminUrl, `create database "${templateName}"`);
    const database = await openDatabase({
      kind: 'server',
      url: databaseUrl(adminUrl, templateName),
      poolSize: 2,
    });
    await runMigrations(database);
    const queue = new JobQueue(database, silent);
    await queue.start();
    await queue.stop(1000);
    await database.close();
    project.provide('template', { kind: 'server', adminUrl, templateName });
    return async () => {
      await adminQuery(adminUrl, `drop database if exists "${templateName}" with (force)`);
    };
  }
  const directory = mkdtempSync(path.join(tmpdir(), 'switchboard-template-'));
  const database = await openDatabase({ kind: 'memory' });
  await runMigrations(database);
  const queue = new JobQueue(database, silent);
  await queue.start();
  await queue.stop(1000);
  const dumpFile = path.join(directory, 'template.tar');
  writeFileSync(dumpFile, Buffer.from(await (await database.dumpDataDir!()).arrayBuffer()));
  await database.close();
  project.provide('template', { kind: 'embedded', dumpFile });
  return () => rmSync(directory, { recursive: true, force: true });
}
