import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, type TestApp } from './utils/test-app.js';

const run = promisify(execFile);

/**
 * A client generated from the served document by a mainstream generator (Hey API), compiled with
 * strict TypeScript and run through the main job: what a team that starts from /docs/openapi.json gets.
 */
describe('A client generated from the OpenAPI document', () => {
  let t: TestApp;
  // Inside the project, so that the generated code resolves the project's @types/node.
  const dir = join(process.cwd(), 'test', 'artifacts', `generated-client-${randomBytes(4).toString('hex')}`);
  beforeAll(async () => (t = await startTestApp()));
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('creates, uploads text and a file, waits, reads one back, searches, batches, evaluates and deletes', async () => {
    await mkdir(dir, { recursive: true });
    await run(process.execPath, [
      'test/generated-client/generate.mjs',
      `${t.url}/docs/openapi.json`,
      join(dir, 'client'),
    ]);
    await copyFile('test/generated-client/flow.ts', join(dir, 'flow.ts'));
    await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'ES2023',
          lib: ['ES2023', 'DOM'],
          types: ['node'],
          strict: true,
          skipLibCheck: true,
          outDir: 'out',
        },
        files: ['flow.ts'],
      }),
    );
    // Type errors fail here: the flow must compile against the generated types as written.
    await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', join(dir, 'tsconfig.json')]);
    const key = await t.createApiKey();
    const { stdout } = await run(process.execPath, [join(dir, 'out', 'flow.js'), key.api_key]);
    const seen = JSON.parse(stdout) as {
      statuses: string[];
      file: { filename: string; metadata: object };
      search: { document_id: string; score: number }[];
      batch: { query: string; results: number }[];
      evaluation: { modes: string[]; mrr_at_10: number; per_query: number };
      documents: { text: string; file: string };
      read: { text: string; next_offset: number | null; chunks: boolean[]; around: boolean };
      after_delete: { status: number; code: string };
    };
    expect(seen.statuses).toEqual(['ready', 'ready']);
    expect(seen.file).toEqual({ filename: 'blob', metadata: { category: 'account' } });
    expect(seen.search.map((result) => result.document_id)).toEqual([seen.documents.text]);
    expect(seen.batch).toEqual([
      { query: 'install on linux', results: 1 },
      { query: 'reset a password', results: 1 },
    ]);
    // Keyword-only here: each query's judged document first.
    expect(seen.evaluation).toEqual({ modes: ['keyword'], mrr_at_10: 1, per_query: 2 });
    // The document read back through the generated reads, its one chunk at its offsets.
    expect(seen.read).toEqual({
      text: 'To install on Linux, download the package and run the installer.',
      next_offset: null,
      chunks: [true],
      around: true,
    });
    expect(seen.after_delete).toEqual({ status: 404, code: 'dataset_not_found' });
  });
});
