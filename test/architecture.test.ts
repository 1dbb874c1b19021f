/**
 * The architecture's rules, checked on the source itself (docs/architecture.md explains them):
 * - a domain's tables belong to it: no file of domain X imports domain Y's store, and only the
 *   domain that owns a table (TABLE_OWNERS) inserts, updates or deletes its rows;
 * - services speak the domain, not HTTP: only route files (and the composition root) import `src/http/`;
 * - no import cycle among the modules of `src/` (what `npm run lint:cycles` reports too);
 * - no source file grows past 450 lines without being split along its ideas.
 * Each rule is also tested against a small made-up module graph, so a rule that cannot fail is caught.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');
const MAX_LINES = 450;

type Graph = Map<string, string[]>;

/** Which domain writes each table. A new table gets its owner here, or the check below fails. */
const TABLE_OWNERS: Record<string, string> = {
  users: 'identity',
  memberships: 'identity',
  authSessions: 'identity',
  loginFailures: 'identity',
  emailTokens: 'identity',
  invitations: 'users',
  organizations: 'organizations',
  providerCredentials: 'organizations',
  apiKeys: 'api-keys',
  wallets: 'billing',
  ledgerEntries: 'billing',
  llmPresets: 'llm-presets',
  fallbackKeys: 'fallback-keys',
  assistants: 'assistants',
  phoneNumbers: 'phone-numbers',
  assistantGraphs: 'graphs',
  graphNodes: 'graphs',
  graphEdges: 'graphs',
  graphSessions: 'graphs',
  graphTransitions: 'graphs',
  graphNodeRollups: 'graphs',
  graphTransitionRollups: 'graphs',
  calls: 'calls',
  callTranscriptSegments: 'calls',
  callSearchDocuments: 'calls',
  callEvents: 'calls',
  callTurns: 'calls',
  callRollups: 'calls',
  callToolRollups: 'calls',
  vendorLeases: 'leases',
  callRecordings: 'recordings',
  callAnalyses: 'analysis',
  knowledgeDocuments: 'knowledge',
  knowledgeChunks: 'knowledge',
  messages: 'sms',
  smsIdempotencyKeys: 'sms',
  smsCompliance: 'sms-compliance',
  /** Written by the database's own triggers (migration 0019); no domain's. */
  smsSendingVersions: '',
  campaigns: 'campaigns',
  campaignSchedules: 'campaigns',
  campaignContacts: 'campaigns',
  campaignExecutions: 'campaigns',
  webhookDeliveries: 'webhooks',
  /** Written by `db/rate-windows.ts` for whoever rate-limits; no domain's. */
  rateLimitWindows: '',
};
const snakeCase = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'migrations' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports and re-exports (type-only ones too: they tie modules together all the same). */
function importsOf(file: string, text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    found.push(relative(ROOT, resolve(dirname(file), match[1] as string)).replace(/\.js$/, '.ts'));
  }
  return found;
}

/** Tables a module inserts into, updates or deletes from: Drizzle calls and raw SQL alike. */
function tablesWritten(text: string): string[] {
  const bySnakeName = new Map(Object.keys(TABLE_OWNERS).map((table) => [snakeCase(table), table]));
  const found = new Set<string>();
  for (const match of text.matchAll(/\.(?:insert|update|delete)\((\w+)\)/g)) found.add(match[1] as string);
  for (const match of text.matchAll(/\b(?:insert\s+into|update|delete\s+from)\s+([a-z_]+)\b/gi)) {
    const table = bySnakeName.get((match[1] as string).toLowerCase());
    if (table) found.add(table);
  }
  return [...found].filter((table) => table in TABLE_OWNERS);
}

function buildGraph(): { graph: Graph; lines: Map<string, number>; writes: Map<string, string[]> } {
  const graph: Graph = new Map();
  const lines = new Map<string, number>();
  const writes = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    const name = relative(ROOT, file);
    graph.set(name, importsOf(file, text));
    lines.set(name, text.split('\n').length - (text.endsWith('\n') ? 1 : 0));
    writes.set(name, tablesWritten(text));
  }
  return { graph, lines, writes };
}

function foreignWrites(writes: Map<string, string[]>): string[] {
  const found: string[] = [];
  for (const [file, tables] of writes) {
    const domain = domainOf(file);
    if (!domain) continue;
    for (const table of tables) if (TABLE_OWNERS[table] !== domain) found.push(`${file} writes ${table}`);
  }
  return found;
}

const domainOf = (path: string) => /^src\/domains\/([^/]+)\//.exec(path)?.[1];
const isStore = (path: string) => /(^|\/)([a-z-]+-)?store\.ts$/.test(path);
const isRouteFile = (path: string) => /(^|\/)([a-z-]+-)?routes\.ts$/.test(path);
/** The composition root builds the HTTP app and the processes around it; it may use `src/http/`. */
const COMPOSITION_ROOT = new Set([
  'src/app.ts',
  'src/platform.ts',
  'src/platform-types.ts',
  'src/server.ts',
  'src/openapi-document.ts',
]);

function foreignStoreImports(graph: Graph): string[] {
  const found: string[] = [];
  for (const [file, imports] of graph) {
    const domain = domainOf(file);
    if (!domain) continue;
    for (const target of imports) {
      const owner = domainOf(target);
      if (owner && owner !== domain && isStore(target)) found.push(`${file} → ${target}`);
    }
  }
  return found;
}

function httpImportsOutsideRoutes(graph: Graph): string[] {
  const found: string[] = [];
  for (const [file, imports] of graph) {
    if (file.startsWith('src/http/') || isRouteFile(file) || COMPOSITION_ROOT.has(file)) continue;
    for (const target of imports) if (target.startsWith('src/http/')) found.push(`${file} → ${target}`);
  }
  return found;
}

/** Strongly connected components with more than one module, or a module importing itself (Tarjan). */
function cycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  let next = 0;
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node) as number, index.get(target) as number));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || graph.get(node)?.includes(node)) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

describe('the rules, on a made-up module graph', () => {
  const graph: Graph = new Map([
    ['src/domains/sms/service.ts', ['src/domains/calls/store.ts', 'src/http/errors.ts']],
    ['src/domains/sms/routes.ts', ['src/http/errors.ts', 'src/domains/sms/store.ts']],
    ['src/domains/calls/store.ts', ['src/domains/calls/reads.ts']],
    ['src/domains/calls/reads.ts', ['src/domains/calls/store.ts']],
    ['src/domains/campaigns/execution/store.ts', []],
    ['src/domains/campaigns/service.ts', ['src/domains/campaigns/execution/store.ts']],
  ]);

  it('finds a store imported from another domain, and only that', () => {
    expect(foreignStoreImports(graph)).toEqual(['src/domains/sms/service.ts → src/domains/calls/store.ts']);
  });

  it('finds a service importing src/http, and lets route files do it', () => {
    expect(httpImportsOutsideRoutes(graph)).toEqual(['src/domains/sms/service.ts → src/http/errors.ts']);
  });

  it("finds a write to another domain's table, in Drizzle or in SQL", () => {
    const writes = new Map([
      [
        'src/domains/webhooks/store.ts',
        tablesWritten('ex.update(organizations).set({}); ex.insert(webhookDeliveries)'),
      ],
      ['src/domains/campaigns/execution/store.ts', tablesWritten('sql`update calls set status = 1`')],
      ['src/domains/calls/store.ts', tablesWritten('ex.delete(calls); sql`insert into call_events`')],
    ]);
    expect(foreignWrites(writes)).toEqual([
      'src/domains/webhooks/store.ts writes organizations',
      'src/domains/campaigns/execution/store.ts writes calls',
    ]);
  });

  it('finds a cycle', () => {
    expect(cycles(graph)).toEqual([['src/domains/calls/reads.ts', 'src/domains/calls/store.ts']]);
  });
});

describe('the rules, on src/', () => {
  const { graph, lines, writes } = buildGraph();

  it('reads the whole source tree and resolves its imports', () => {
    expect(graph.size).toBeGreaterThan(150);
    const unresolved = [...graph.values()].flat().filter((target) => !graph.has(target));
    expect(unresolved.filter((target) => target.startsWith('src/'))).toEqual([]);
  });

  it('no domain imports the store of another domain', () => {
    expect(foreignStoreImports(graph)).toEqual([]);
  });

  it('every table has an owner, and only its owner writes it', () => {
    const schema = sourceFiles(join(SRC, 'db', 'schema')).map((file) => readFileSync(file, 'utf8'));
    const tables = schema.flatMap((text) =>
      [...text.matchAll(/export const (\w+) = pgTable\(/g)].map((m) => m[1]),
    );
    expect(tables.length).toBeGreaterThan(25);
    expect(tables.filter((table) => !((table as string) in TABLE_OWNERS))).toEqual([]);
    expect(foreignWrites(writes)).toEqual([]);
  });

  it('only route files and the composition root import src/http', () => {
    expect(httpImportsOutsideRoutes(graph)).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it(`has no source file over ${MAX_LINES} lines`, () => {
    const long = [...lines]
      .filter(([, count]) => count > MAX_LINES)
      .map(([file, count]) => `${file}: ${count}`);
    expect(long).toEqual([]);
  });
});
