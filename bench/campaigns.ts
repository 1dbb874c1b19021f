/**
 * `npm run bench -- campaigns [import rows=100000] [dispatch contacts=10000]`: the contact import
 * (bench/campaign-import.ts), the dispatch (bench/campaign-dispatch.ts) and the progress query
 * (bench/campaign-progress.ts), each on a platform of its own. Each also runs alone:
 * `npm run bench -- campaign-import [rows]`, `-- campaign-dispatch [contacts]`, `-- campaign-progress`.
 */
import { benchDispatch } from './campaign-dispatch.js';
import { benchImport } from './campaign-import.js';
import { benchProgress } from './campaign-progress.js';

export async function run(args: string[]): Promise<void> {
  await benchImport(Number(args[0] ?? 100_000));
  await benchDispatch(Number(args[1] ?? 10_000));
  await benchProgress();
}
