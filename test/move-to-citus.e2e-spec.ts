import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { addDocument, createDataset, ingest } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { createPlainTestDatabase, createTestDatabase, type TestDatabase } from './utils/test-database.js';
import { describeOnCitus } from './utils/topology.js';

/**
 * A deployment moved from one PostgreSQL to Citus with scripts/move-to-citus.sh
 * (docs/deployment.md): served on one PostgreSQL, stopped, copied into a Citus database the service
 * migrated, served from there. The same searches answer the same, and the moved deployment takes new
 * documents (the sequences were carried over: a new chunk's seq repeats none copied).
 */
describeOnCitus('Moving a deployment from one PostgreSQL to Citus', () => {
  const CONTENTS = [
    'Mitochondria convert nutrients into cellular energy.',
    'Ribosomes assemble proteins from amino acids.',
    'Chloroplasts capture light energy in plant cells.',
    'The nucleus keeps the cell genome and its energy budget.',
  ];
  const QUERIES = ['cell energy', 'proteins', 'light'];
  let openai: FakeOpenAI;
  let source: TestDatabase;
  let target: TestDatabase;
  let app: TestApp | undefined;
  let key: CreatedKey;
  let datasets: string[];
  let before: unknown[];

  const searchAll = async (served: TestApp) => {
    const answers: unknown[] = [];
    for (const datasetId of datasets) {
      for (const query of QUERIES) {
        for (const mode of ['keyword', 'semantic', 'hybrid']) {
          const { body } = await served.http
            .post('/v1/mcp/query')
            .set(bearer(key))
            .send({ dataset_id: datasetId, query, mode, limit: 3 })
            .expect(200);
          answers.push(
            (body.results as { document_id: string; chunk_id: string; score: number }[]).map((r) => [
              r.document_id,
              r.chunk_id,
              Number(r.score.toFixed(6)),
            ]),
          );
        }
      }
    }
    return answers;
  };

  beforeAll(async () => {
    openai = await startFakeOpenAI(8);
    source = await createPlainTestDatabase();
    target = await createTestDatabase();
    app = await startTestApp(openAiEnv(openai), { database: source });
    key = await app.createApiKey();
    datasets = [await createDataset(app.http, key), await createDataset(app.http, key)];
    for (const datasetId of datasets) {
      await ingest(
        app,
        key,
        datasetId,
        CONTENTS.map((content) => ({ content, metadata: { source: 'moved' } })),
      );
    }
    before = await searchAll(app);
    await app.close();
    app = undefined;
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await source?.drop();
    await target?.drop();
    await openai?.close();
  });

  it('copies every table, then serves the same answers and takes new documents', async () => {
    const { stdout } = await promisify(execFile)('bash', [
      'scripts/move-to-citus.sh',
      source.url,
      target.url,
    ]);
    expect(stdout).toContain('every table holds as many rows in both');

    app = await startTestApp(openAiEnv(openai), { database: target });
    expect(await searchAll(app)).toEqual(before);
    const added = (
      await addDocument(app.http, key, datasets[0], { content: 'Lysosomes digest worn-out organelles.' })
    ).document_id;
    const { body } = await app.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasets[0], query: 'lysosomes organelles', mode: 'keyword', limit: 1 })
      .expect(200);
    expect(body.results[0].document_id).toBe(added);
    const { rows } = await app.sql.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM (SELECT seq FROM chunks GROUP BY seq HAVING count(*) > 1) d',
    );
    expect(rows[0].n).toBe(0);
  }, 120_000);

  it('refuses a target that already holds a deployment, and changes nothing', async () => {
    const move = promisify(execFile)('bash', ['scripts/move-to-citus.sh', source.url, target.url]);
    await expect(move).rejects.toMatchObject({ stderr: expect.stringContaining('not empty') });
    const { rows } = await app!.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM documents');
    expect(rows[0].n).toBe(2 * CONTENTS.length + 1);
  });
});
