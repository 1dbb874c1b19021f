#!/usr/bin/env node
/**
 * Makes package-lock.json acceptable to `npm ci` where the npm registry mirror lacks the other
 * platforms' builds of platform-specific optional packages (Biome, Rollup). `npm install` leaves
 * those out of the lock; `npm ci` then refuses the lock as out of sync. Recording each missing one
 * as an optional entry lets `npm ci` skip it like any optional package it cannot install.
 * Idempotent; run it after every dependency change: `npm run lock:complete`.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;
let added = 0;
for (const [path, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${path ? `${path}/` : ''}node_modules/${name}`;
    const top = `node_modules/${name}`;
    if (packages[nested] || packages[top]) continue;
    packages[top] = { version, optional: true };
    added += 1;
  }
}
lock.packages = Object.fromEntries(
  // npm orders the lock's entries by locale comparison (`string-width` before `string_decoder`); the same
  // order here keeps the next `npm install` from rewriting the file.
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b, 'en'))),
);
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: ${added} optional platform package(s) recorded`);
