import { readFile } from 'node:fs/promises';
import { createDataset, type DocumentBody, waitForDocument } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

const FIXTURES = '../shared/fixtures';

/**
 * Paragraphs that each fill most of a chunk at the suite's chunk size (64 estimated tokens, about 190
 * characters), so that each is a chunk of its own and an edit of one leaves the others' text as it was.
 */
function paragraphs(count: number, word = (i: number) => `topic${i}`): string[] {
  return Array.from(
    { length: count },
    (_, i) =>
      `Paragraph ${i} is about ${word(i)} and nothing else. ` +
      `It says ${word(i)} twice, to be found by it, and runs on long enough to fill its own chunk alone.`,
  );
}
const join = (parts: string[]) => parts.join('\n\n');

interface Result {
  chunk_id: string;
  document_id: string;
  content: string;
}

describe('PUT of a document: a new version in place', () => {
  let t: TestApp;
  let openai: FakeOpenAI;
  let key: CreatedKey;
  let other: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    openai = await startFakeOpenAI();
    t = await startTestApp({
      ...openAiEnv(openai),
      CHUNK_TOKENS: '64',
      CHUNK_OVERLAP_TOKENS: '8',
      // The search load of the last test, well past the default limit of a key.
      RATE_LIMIT_API_KEY: '100000',
    });
    key = await t.createApiKey('document-replace');
    other = await t.createApiKey('document-replace-other');
    datasetId = await createDataset(t.http, key);
  });
  afterAll(async () => {
    await t?.close();
    await openai?.close();
  });

  const path = (documentId: string, dataset = datasetId) => `/v1/datasets/${dataset}/documents/${documentId}`;
  const create = async (body: object, dataset = datasetId): Promise<DocumentBody> => {
    const response = await t.http
      .post(`/v1/datasets/${dataset}/documents`)
      .set(bearer(key))
      .send(body)
      .expect(201);
    return waitForDocument(t.http, key, dataset, (response.body as DocumentBody).document_id);
  };
  const put = (documentId: string, body: object, as = key) =>
    t.http
      .put(path(documentId))
      .set(bearer(as))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(body));
  const search = async (query: string, mode = 'keyword', dataset = datasetId): Promise<Result[]> => {
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: dataset, query, mode, limit: 20 });
    if (response.status !== 200) throw new Error(`search answered ${response.status}: ${response.text}`);
    return response.body.results as Result[];
  };
  const vectors = async (documentId: string) =>
    new Map(
      (
        await t.sql.query<{ content: string; embedding: string }>(
          'SELECT content, embedding::text AS embedding FROM chunks WHERE document_id = $1',
          [documentId],
        )
      ).rows.map((row) => [row.content, row.embedding]),
    );
  const eventsOf = async (documentId: string) =>
    (
      await t.sql.query<{ event: string; data: Record<string, unknown> }>(
        'SELECT event, data FROM events WHERE resource_id = $1 ORDER BY seq',
        [documentId],
      )
    ).rows;

  it('keeps the id, embeds only the changed chunk, and keeps the vectors of the others', async () => {
    const before = paragraphs(12);
    const document = await create({ content: join(before), metadata: { team: 'docs' } });
    expect(document).toMatchObject({
      status: 'ready',
      chunks_created: 12,
      chunks_embedded: 12,
      chunks_reused: 0,
    });
    const oldVectors = await vectors(document.document_id);

    const after = [...before];
    after[5] = paragraphs(12, (i) => (i === 5 ? 'lighthouse' : `topic${i}`))[5];
    openai.inputs.length = 0;
    const response = await put(document.document_id, { content: join(after) }).expect(200);
    expect(response.body).toMatchObject({ document_id: document.document_id, status: 'processing' });
    const ready = await waitForDocument(t.http, key, datasetId, document.document_id);
    expect(ready).toMatchObject({
      status: 'ready',
      chunks_created: 12,
      chunks_embedded: 1,
      chunks_reused: 11,
    });
    // Metadata left out stays.
    expect(ready.metadata).toEqual({ team: 'docs' });
    // One chunk's text changed (chunks begin with the overlap of the one before: none other did).
    expect(openai.inputs).toHaveLength(1);
    expect(openai.inputs[0]).toContain(after[5]);

    const newVectors = await vectors(document.document_id);
    const kept = [...newVectors.keys()].filter((content) => oldVectors.has(content));
    expect(kept).toHaveLength(11);
    for (const content of kept) expect(newVectors.get(content)).toBe(oldVectors.get(content));
    expect((await search('lighthouse')).map((result) => result.document_id)).toEqual([document.document_id]);
    expect(await search('topic5')).toEqual([]);

    const events = await eventsOf(document.document_id);
    expect(events.map((event) => event.event)).toEqual([
      'document.uploaded',
      'document.processed',
      'document.updated',
      'document.processed',
    ]);
    expect(events[2].data).toEqual({
      document_id: document.document_id,
      dataset_id: datasetId,
      changes: {
        content: { filename: null, size_bytes: Buffer.byteLength(join(after)), status: 'processing' },
      },
      updated_by: expect.stringMatching(/^key_/),
    });
  });

  it('replaces text with a file of another kind, and the metadata when it is sent', async () => {
    const document = await create({ content: join(paragraphs(3)), metadata: { team: 'docs', draft: true } });
    const file = await readFile(`${FIXTURES}/md/example-docs-README.md`);
    const response = await t.http
      .put(path(document.document_id))
      .set(bearer(key))
      .field('metadata', JSON.stringify({ team: 'ops' }))
      .attach('file', file, 'guide.md')
      .expect(200);
    expect(response.body).toMatchObject({
      filename: 'guide.md',
      size_bytes: file.length,
      metadata: { team: 'ops' },
    });
    const ready = await waitForDocument(t.http, key, datasetId, document.document_id);
    expect(ready).toMatchObject({ status: 'ready', filename: 'guide.md', metadata: { team: 'ops' } });
    const original = await t.http
      .get(`${path(document.document_id)}/file`)
      .set(bearer(key))
      .expect(200);
    expect(original.text).toBe(file.toString('utf8'));
    const [updated] = (await eventsOf(document.document_id)).filter(
      (event) => event.event === 'document.updated',
    );
    expect(updated.data.changes).toEqual({
      metadata: { team: 'ops' },
      content: { filename: 'guide.md', size_bytes: file.length, status: 'processing' },
    });
  });

  it('leaves the previous version searchable and readable when the new one fails', async () => {
    const document = await create({ content: join(paragraphs(2, () => 'estuary')) });
    const pdf = await readFile(`${FIXTURES}/pdf/encrypted-password.pdf`);
    await t.http
      .put(path(document.document_id))
      .set(bearer(key))
      .attach('file', pdf, 'locked.pdf')
      .expect(200);
    const failed = await waitForDocument(t.http, key, datasetId, document.document_id);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ code: 'invalid_pdf', details: { reason: 'encrypted' } });
    expect((await search('estuary')).map((result) => result.document_id)).toEqual([
      document.document_id,
      document.document_id,
    ]);
    const chunks = await t.http
      .get(`${path(document.document_id)}/chunks`)
      .set(bearer(key))
      .expect(200);
    expect(chunks.body.chunks).toHaveLength(2);
    const text = await t.http
      .get(`${path(document.document_id)}/text`)
      .set(bearer(key))
      .expect(200);
    expect(text.body.text).toContain('estuary');
    // Reprocessing the failed version takes the old chunks out, as for any reprocess.
    await t.http
      .post(`${path(document.document_id)}/reprocess`)
      .set(bearer(key))
      .expect(200);
    await waitForDocument(t.http, key, datasetId, document.document_id);
    expect(await search('estuary')).toEqual([]);
  });

  it('refuses what an upload refuses, and a document the caller cannot write, changing nothing', async () => {
    const document = await create({ content: join(paragraphs(1, () => 'cormorant')) });
    const unchanged = async () => {
      const now = (await t.http.get(path(document.document_id)).set(bearer(key)).expect(200))
        .body as DocumentBody;
      expect(now).toMatchObject({ status: 'ready', size_bytes: document.size_bytes });
      expect((await search('cormorant')).map((result) => result.document_id)).toEqual([document.document_id]);
    };
    expect((await put(document.document_id, {}).expect(400)).body.code).toBe('validation_error');
    expect((await put(document.document_id, { content: ' \u200b ' }).expect(400)).body.code).toBe(
      'validation_error',
    );
    expect((await put(document.document_id, { content: 'x', metadata: [] }).expect(400)).body.code).toBe(
      'invalid_metadata',
    );
    const large = await put(document.document_id, { content: 'x'.repeat(1_000_001) });
    expect([large.status, large.body.code]).toEqual([413, 'content_too_large']);
    const kind = await t.http
      .put(path(document.document_id))
      .set(bearer(key))
      .attach('file', Buffer.from([0, 1, 2, 3, 0xff]), 'blob.bin');
    expect([kind.status, kind.body.code]).toEqual([415, 'unsupported_file_type']);
    expect((await put('doc_unknown0000000000000000', { content: 'x' }).expect(404)).body.code).toBe(
      'document_not_found',
    );
    expect((await put(document.document_id, { content: 'x' }, other).expect(404)).body.code).toBe(
      'dataset_not_found',
    );
    await unchanged();
  });

  it('answers a repeated Idempotency-Key as first, starting one run', async () => {
    const document = await create({ content: join(paragraphs(1, () => 'heron')) });
    const send = (content: string) =>
      put(document.document_id, { content }).set('Idempotency-Key', `replace-${document.document_id}`);
    const first = await send(join(paragraphs(1, () => 'egret'))).expect(200);
    const again = await send(join(paragraphs(1, () => 'egret'))).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await send(join(paragraphs(1, () => 'ibis'))).expect(422)).body.code).toBe(
      'idempotency_key_reused',
    );
    await waitForDocument(t.http, key, datasetId, document.document_id);
    const updates = (await eventsOf(document.document_id)).filter(
      (event) => event.event === 'document.updated',
    );
    expect(updates).toHaveLength(1);
  });

  it('gives way to a later version sent while the first is processing', async () => {
    const document = await create({ content: join(paragraphs(1, () => 'plover')) });
    openai.delayMs = 300;
    try {
      await put(document.document_id, { content: join(paragraphs(1, () => 'sandpiper')) }).expect(200);
      await put(document.document_id, { content: join(paragraphs(1, () => 'turnstone')) }).expect(200);
      await waitForDocument(t.http, key, datasetId, document.document_id);
    } finally {
      openai.delayMs = 0;
    }
    expect(await search('sandpiper')).toEqual([]);
    expect((await search('turnstone')).map((result) => result.document_id)).toEqual([document.document_id]);
    const processed = (await eventsOf(document.document_id)).filter(
      (event) => event.event === 'document.processed',
    );
    expect(processed).toHaveLength(2); // the upload's and the last version's
  });

  it('indexes replacements beside uploads of the same words, every statistic exact after', async () => {
    const dataset = await createDataset(t.http, key);
    const words = (i: number) => paragraphs(3, (p) => `common shared word${(i + p) % 4}`);
    const originals = await Promise.all(
      Array.from({ length: 6 }, (_, i) => create({ content: join(words(i)) }, dataset)),
    );
    // Replacements and uploads at once, all holding the same few terms.
    const replaced = originals.map((document, i) =>
      t.http
        .put(path(document.document_id, dataset))
        .set(bearer(key))
        .send({ content: join(words(i + 1)) })
        .expect(200),
    );
    const uploads = Array.from({ length: 6 }, (_, i) =>
      t.http
        .post(`/v1/datasets/${dataset}/documents`)
        .set(bearer(key))
        .send({ content: join(words(i + 2)) })
        .expect(201),
    );
    const answered = await Promise.all([...replaced, ...uploads]);
    for (const { body } of answered) {
      expect((await waitForDocument(t.http, key, dataset, body.document_id as string)).status).toBe('ready');
    }
    const [{ seq }] = (await t.sql.query('SELECT seq FROM datasets WHERE id = $1', [dataset])).rows;
    const { rows } = await t.sql.query<{ wrong: number; n: number; total: number }>(
      `SELECT (SELECT count(*)::int FROM term_stats t
                WHERE t.dataset_seq = $1
                  AND t.df <> (SELECT count(*) FROM chunk_terms p WHERE p.dataset_seq = $1 AND p.term = t.term)) AS wrong,
              i.chunk_count::int AS n, (SELECT count(*)::int FROM chunks c WHERE c.dataset_seq = $1) AS total
         FROM dataset_index i WHERE i.dataset_seq = $1`,
      [seq],
    );
    expect(rows).toEqual([{ wrong: 0, n: 36, total: 36 }]);
  });

  it('never answers a search with chunks of two versions, or of neither, while versions switch', async () => {
    const dataset = await createDataset(t.http, key);
    const text = (version: number) => join(paragraphs(6, (i) => `tern${version}x${i}`));
    const document = await create({ content: text(0) }, dataset);
    const versions: Set<string>[] = [];
    const chunkIds = async () =>
      new Set(
        (
          await t.sql.query<{ id: string }>('SELECT id FROM chunks WHERE document_id = $1', [
            document.document_id,
          ])
        ).rows.map((row) => row.id),
      );
    versions.push(await chunkIds());

    const answers: Result[][] = [];
    let searching = true;
    // Hybrid: its two legs read in snapshots of their own, and the rows in a third.
    const load = async () => {
      while (searching)
        answers.push(await search('paragraph about tern and nothing else', 'hybrid', dataset));
    };
    const loads = Array.from({ length: 4 }, load);
    for (let version = 1; version <= 6; version++) {
      await t.http
        .put(path(document.document_id, dataset))
        .set(bearer(key))
        .send({ content: text(version) })
        .expect(200);
      await waitForDocument(t.http, key, dataset, document.document_id);
      versions.push(await chunkIds());
    }
    searching = false;
    await Promise.all(loads);

    expect(answers.length).toBeGreaterThan(50);
    const versionOf = (chunkId: string) => versions.findIndex((ids) => ids.has(chunkId));
    const mixed = answers.filter(
      (results) => new Set(results.map((result) => versionOf(result.chunk_id))).size !== 1,
    );
    expect(mixed).toEqual([]);
    expect(answers.every((results) => results.length === 6)).toBe(true);
  });
});
