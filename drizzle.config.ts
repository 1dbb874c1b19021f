import { defineConfig } from 'drizzle-kit';

// Used only by `npm run db:generate` to turn schema changes into a committed SQL migration.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema/index.ts',
  out: './src/db/migrations',
});
