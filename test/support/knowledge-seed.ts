/**
 * Knowledge passages for retrieval tests: a few answers that paraphrased questions should find, among
 * ~30 distractors on other topics, stored as documents and chunks (through the chunk store) with the
 * embeddings simulator's vectors. Documents are written directly: the documents API is another
 * module's, and these tests are about what retrieval reads.
 */
import { knowledgeDocuments } from '../../src/db/schema/index.js';
import type { DocumentStatus } from '../../src/db/schema/knowledge.js';
import { Tenant } from '../../src/db/tenant.js';
import { insertChunks } from '../../src/domains/knowledge/chunk-store.js';
import { estimateTokens } from '../../src/domains/knowledge/types.js';
import { simulatedEmbedding } from '../../src/sim/embedding-vectors.js';
import type { TestPlatform } from './harness.js';

export const DIMENSIONS = 1536;

/** The passages the paraphrases below are about. */
export const ANSWERS = {
  warranty:
    'Every appliance comes with a two-year warranty. We guarantee free repair or replacement of any part that fails within 24 months of delivery.',
  returns:
    'You can send back any item within 30 days of purchase. Items sent back unused get a full refund to the original card.',
  hours:
    'Our showrooms are open on weekends: Saturday from 9 to 6 and Sunday from 10 to 4. Weekday opening is 8 to 8.',
  shipping:
    'We ship to most countries abroad. Overseas delivery takes 7 to 12 days and customs duties are paid by the customer.',
};

/** Question → the answer it should find: each shares at least one stem with its answer, few words. */
export const PARAPHRASES: Array<[string, keyof typeof ANSWERS]> = [
  ['How long is the guarantee good for?', 'warranty'],
  ['Can I send a purchase back?', 'returns'],
  ['When are you open at the weekend?', 'hours'],
  ['Do you deliver overseas?', 'shipping'],
];

export const DISTRACTORS = [
  'The kitchen mixer has five speeds and a pulse button for crushing ice.',
  'Cleaning the filter every month keeps the vacuum cleaner running quietly.',
  'Our loyalty program awards one point for every dollar spent in store.',
  'Gift cards never expire and can be used online or in any showroom.',
  'The dishwasher uses nine liters of water per cycle in eco mode.',
  'Replacement blades for the blender are sold in packs of two.',
  'The smart thermostat learns your schedule within a week of use.',
  'Install the washing machine on a level floor to reduce vibration.',
  'Our customer forum has answers from engineers and other owners.',
  'The coffee grinder offers eighteen grind settings from fine to coarse.',
  'Descale the kettle with citric acid when white deposits appear.',
  'The refrigerator door alarm sounds after two minutes left open.',
  'Student discounts apply to laptops and tablets with a valid card.',
  'The air purifier removes pollen, dust and smoke from large rooms.',
  'Firmware updates for the oven are installed automatically overnight.',
  'Our recipes section has ideas for slow cookers and pressure cookers.',
  'The microwave has a child lock that is set by holding stop.',
  'Energy labels rate appliances from A for efficient to G for wasteful.',
  'The robot mower handles slopes up to thirty five percent.',
  'Batteries of cordless tools charge fully in about an hour.',
  'Our newsletter announces seasonal sales and new product launches.',
  'The induction hob only heats pans with a magnetic base.',
  'Water hardness settings protect the coffee machine from scale.',
  'The tumble dryer condenses moisture into a tank you empty by hand.',
  'Paint colours for the retro fridge include mint, cream and red.',
  'The baby monitor works up to three hundred meters away outdoors.',
  'Spare parts diagrams are in the manual for each model.',
  'The electric toothbrush vibrates thirty thousand times a minute.',
  'Recycling old appliances is free when we install a new one.',
  'The toaster has a bagel setting that browns only one side.',
];

export interface SeededDocument {
  documentId: number;
  /** Chunk ids by content. */
  chunks: Map<string, number>;
}

/** A document of the assistant holding `passages` as its chunks (embedded unless `embed` is false). */
export async function seedDocument(
  t: TestPlatform,
  organizationId: number,
  assistantId: number,
  passages: string[],
  options: {
    name?: string;
    category?: string | null;
    tags?: string[];
    status?: DocumentStatus;
    embed?: boolean;
    location?: (i: number) => { page?: number; heading?: string };
  } = {},
): Promise<SeededDocument> {
  const [document] = await t.database.db
    .insert(knowledgeDocuments)
    .values({
      organizationId,
      assistantId,
      name: options.name ?? 'Store handbook',
      category: options.category ?? null,
      tags: options.tags ?? [],
      fileName: 'handbook.md',
      contentType: 'text/markdown',
      format: 'markdown',
      bytes: passages.join('\n\n').length,
      storageKey: `test/${Math.random().toString(36).slice(2)}`,
      status: options.status ?? 'completed',
      settings: {
        chunking_strategy: 'recursive',
        chunk_size: 1000,
        chunk_overlap: 200,
        embedding_model: 'text-embedding-3-small',
      },
      totalChunks: passages.length,
      processedChunks: passages.length,
    })
    .returning({ id: knowledgeDocuments.id });
  const documentId = document?.id as number;
  await insertChunks(
    t.database.db,
    new Tenant(organizationId),
    passages.map((content, position) => ({
      assistantId,
      documentId,
      generation: 1,
      position,
      content,
      tokens: estimateTokens(content),
      location: options.location?.(position) ?? { heading: 'Help', page: position + 1 },
      embedding: options.embed === false ? null : simulatedEmbedding(content, DIMENSIONS),
    })),
    new Set(),
  );
  const rows = (await t.database.executeSql(
    'select id, content from knowledge_chunks where document_id = $1',
    [documentId],
  )) as { rows: Array<{ id: number | string; content: string }> };
  return { documentId, chunks: new Map(rows.rows.map((row) => [row.content, Number(row.id)])) };
}
