/** `npm run bench -- <name>` runs bench/<name>.ts. */
import { readdirSync } from 'node:fs';

const name = process.argv[2];
const available = readdirSync(new URL('.', import.meta.url))
  .filter((file) => file.endsWith('.ts') && !['run.ts', 'support.ts'].includes(file))
  .map((file) => file.replace(/\.ts$/, ''));
if (!name || !available.includes(name)) {
  console.error(`Usage: npm run bench -- <${available.join(' | ')}>`);
  process.exit(2);
}
const bench = (await import(`./${name}.ts`)) as { run(args: string[]): Promise<void> };
await bench.run(process.argv.slice(3));
process.exit(0);
