/**
 * The web console as the server serves it (src/console): `/` leads there, every console path answers
 * the one page (deep links and reloads work), assets come from the in-memory build with ETags, the
 * page is held to a strict Content-Security-Policy, nothing of it is in the API's document, and a
 * broken build is reported, then retried once the sources are fixed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { buildConsole, ConsoleBuilds } from '../src/console/build.js';
import { useTestPlatform } from './support/harness.js';

const t = useTestPlatform({}, { workers: false });

function assetPaths(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"?]+)\?v=[^"]+"/g)].map((m) => m[1]!);
}

describe('serving the console', () => {
  it('sends / to the console', async () => {
    for (const url of ['/', '/console']) {
      const response = await t.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(302);
      expect(response.headers.location).toBe('/console/');
    }
  });

  it('answers every console path with the page, under a strict policy', async () => {
    for (const url of ['/console/', '/console/assistants/7', '/console/verify?token=abc']) {
      const response = await t.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(200);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.body).toContain('<div id="app">');
      const policy = String(response.headers['content-security-policy']);
      expect(policy).toContain("script-src 'self'");
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).not.toContain('unsafe-inline');
      expect(response.headers['x-frame-options']).toBe('DENY');
      // No script of the page's own: everything it runs is an asset of this origin.
      expect(response.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
  });

  it('serves the assets the page names, revalidated by ETag', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/console/' });
    const paths = assetPaths(page.body);
    expect(paths.sort()).toEqual(['/console/assets/app.css', '/console/assets/app.js']);
    for (const path of paths) {
      const asset = await t.app.inject({ method: 'GET', url: path });
      expect(asset.statusCode, path).toBe(200);
      expect(asset.headers['content-type']).toMatch(
        path.endsWith('.js') ? /^text\/javascript/ : /^text\/css/,
      );
      expect(asset.headers['x-content-type-options']).toBe('nosniff');
      expect(asset.body.length).toBeGreaterThan(1000);
      const again = await t.app.inject({
        method: 'GET',
        url: path,
        headers: { 'if-none-match': String(asset.headers.etag) },
      });
      expect(again.statusCode).toBe(304);
      expect(again.body).toBe('');
    }
    // Browsers get it gzipped (once, at build time), the same bytes once unzipped.
    const zipped = await t.app.inject({
      method: 'GET',
      url: '/console/assets/app.js',
      headers: { 'accept-encoding': 'gzip, deflate, br' },
    });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toBe('accept-encoding');
    const script = await t.app.inject({ method: 'GET', url: '/console/assets/app.js' });
    expect(gunzipSync(zipped.rawPayload).toString('utf8')).toBe(script.body);
    expect(zipped.rawPayload.length).toBeLessThan(script.rawPayload.length / 2);
    // The bundle is the app (Preact rendering into #app), minified, with its source map beside it.
    expect(script.body).toContain('getElementById("app")');
    expect(script.body).toMatch(/sourceMappingURL=app\.js\.map/);
    expect((await t.app.inject({ method: 'GET', url: '/console/assets/app.js.map' })).statusCode).toBe(200);
    // The Talk page's AudioWorklet modules, loaded by URL, are built beside the app.
    for (const worklet of ['talk-capture', 'talk-playback']) {
      const module = await t.app.inject({ method: 'GET', url: `/console/assets/${worklet}.js` });
      expect(module.statusCode, worklet).toBe(200);
      expect(module.body).toContain('registerProcessor');
    }
  });

  it('answers 404 for assets it does not have, and never reads outside the build', async () => {
    for (const url of [
      '/console/assets/nope.js',
      '/console/assets/..%2F..%2Fpackage.json',
      '/console/assets/.env',
    ]) {
      const response = await t.app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(response.json()).toEqual({ detail: expect.any(String) });
    }
  });

  it('is not part of the API document', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(document.paths).filter((path) => path === '/' || path.startsWith('/console'))).toEqual(
      [],
    );
  });
});

describe('building the console', () => {
  const roots: string[] = [];
  afterAll(() => {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });

  it('reports a broken build and builds again on the next request', async () => {
    const broken = mkdtempSync(join(tmpdir(), 'console-'));
    roots.push(broken);
    mkdirSync(join(broken, 'src'));
    writeFileSync(join(broken, 'src', 'main.tsx'), 'const broken = ;\n');
    let builds = 0;
    const console = new ConsoleBuilds(() => (builds++ === 0 ? buildConsole(broken) : buildConsole()));
    await expect(console.get()).rejects.toThrow(/main\.tsx/);
    const bundle = await console.get();
    expect(bundle.assets.get('app.js')?.body.length).toBeGreaterThan(1000);
    // Built once it worked: the same bundle is served afterwards.
    expect(await console.get()).toBe(bundle);
    expect(builds).toBe(2);
  });
});
