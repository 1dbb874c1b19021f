#!/usr/bin/env node
// The `switchboard` operator command: runs src/cli.ts through tsx (no build step).
import { register } from 'tsx/esm/api';

register();
const { main, exitQuietlyWhenStdoutCloses } = await import('../src/cli.ts');
exitQuietlyWhenStdoutCloses();
// exitCode, not exit(): exit() would cut off output still queued for a pipe.
process.exitCode = await main(process.argv.slice(2));
