import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Response } from 'superagent';
import { createDataset, type DocumentBody, waitForDocument } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';

const run = promisify(execFile);

type ArchiveRecord = Record<string, unknown> & { type: string };

const GUIDE = `# Kestrel lamps

Every kestrel lamp ships with a brass wick and a glass chimney.

## Trimming the wick

Trim the wick flat with sharp scissors before each lighting, so that the flame burns evenly.

## Cleaning the chimney

Wash the chimney in warm soapy water and dry it fully before it goes back on the lamp.

# Storage

Keep spare wicks in a dry drawer, away from the lamp oil.
`;

const NOTES = Array.from(
  { length: 5 },
  (_, i) => `Harbour note ${i}: the tide turned early and the pier lamps stayed lit.`,
).join('\n\n');

const QUERIES = ['trim the wick', 'chimney cleaning', 'harbour tide', 'lamp oil storage', 'pier lamps'];

/** An archive read from the export route, as its raw (gzip) bytes. */
function binary(response: Response, callback: (error: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  response.on('data', (chunk: Buffer) => chunks.push(chunk));
  response.on('end', () => callback(null, Buffer.concat(chunks)));
}

function recordsOf(archive: Buffer): ArchiveRecord[] {
  return gunzipSync(archive)
    .toString('utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as ArchiveRecord);
}

function pack(records: ArchiveRecord[]): Buffer {
  return gzipSync(Buffer.from(records.map((record) => `${JSON.stringify(record)}\n`).join('')));
}

/** A document record whose bytes are `content`, with the size and digest to match. */
function withContent(record: ArchiveRecord, content: Buffer): ArchiveRecord {
  return {
    ...record,
    content_base64: content.toString('base64'),
    size_bytes: content.length,
    sha256: createHash('sha256').update(content).digest('hex'),
  };
}

function vectorOf(values: number[]): string {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => bytes.writeFloatBE(value, i * 4));
  return bytes.toString('base64');
}

describe('Exporting and importing a dataset', () => {
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;
  let other: CreatedKey;
  let sourceId: string;
  let archive: Buffer;

  const exportOf = (datasetId: string, as: CreatedKey | null = key) => {
    const request = t.http.get(`/v1/datasets/${datasetId}/export`).buffer(true).parse(binary);
    return as ? request.set(bearer(as)) : request;
  };
  const importOf = (body: Buffer, as: CreatedKey = key, app: TestApp = t, query = '') =>
    app.http
      .post(`/v1/datasets/import${query}`)
      .set(bearer(as))
      .set('Content-Type', 'application/gzip')
      .send(body);

  /** What a search finds, ids aside: each hit's text, score and where it comes from. */
  async function searchAll(app: TestApp, as: CreatedKey, datasetId: string): Promise<unknown[]> {
    const found: unknown[] = [];
    for (const query of QUERIES) {
      const response = await app.http
        .post('/v1/mcp/query')
        .set(bearer(as))
        .send({ dataset_id: datasetId, query, limit: 10 })
        .expect(200);
      found.push(
        (response.body.results as Record<string, unknown>[]).map(
          ({ chunk_id: _c, document_id: _d, ...rest }) => rest,
        ),
      );
    }
    return found;
  }

  /** The index as the database holds it, ids aside: totals, document frequencies, each chunk's postings. */
  async function indexOf(app: TestApp, datasetId: string) {
    const [{ seq }] = (await app.sql.query('SELECT seq FROM datasets WHERE id = $1', [datasetId])).rows as {
      seq: string;
    }[];
    const state = await app.sql.query(
      `SELECT chunk_count, total_chunk_length, embedding_model, embedding_dimensions FROM dataset_index
        WHERE dataset_seq = $1`,
      [seq],
    );
    const terms = await app.sql.query(
      'SELECT term, df FROM term_stats WHERE dataset_seq = $1 ORDER BY term',
      [seq],
    );
    const postings = await app.sql.query(
      `SELECT c.content, c.ordinal, p.term, p.tf, p.length FROM chunk_terms p JOIN chunks c ON c.seq = p.chunk_seq
        WHERE p.dataset_seq = $1 ORDER BY c.content, c.ordinal, p.term`,
      [seq],
    );
    const chunks = await app.sql.query(
      `SELECT content, ordinal, token_count, page, char_start, char_end, embedding::text AS embedding
         FROM chunks WHERE dataset_seq = $1 ORDER BY content, ordinal`,
      [seq],
    );
    return { state: state.rows, terms: terms.rows, postings: postings.rows, chunks: chunks.rows };
  }

  async function documentsOf(datasetId: string, as = key) {
    const response = await t.http
      .get(`/v1/datasets/${datasetId}/documents?limit=100`)
      .set(bearer(as))
      .expect(200);
    return (response.body.documents as DocumentBody[])
      .map(({ filename, status, chunks_created, metadata, error }) => ({
        filename,
        status,
        chunks_created,
        metadata,
        error: (error as { code?: string } | undefined)?.code ?? null,
      }))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }

  /** Every row an import writes, counted across the whole database. */
  async function rowCounts(app: TestApp = t) {
    const { rows } = await app.sql.query(
      `SELECT (SELECT count(*) FROM datasets)::int AS datasets, (SELECT count(*) FROM documents)::int AS documents,
              (SELECT count(*) FROM document_sources)::int AS sources, (SELECT count(*) FROM chunks)::int AS chunks,
              (SELECT count(*) FROM chunk_terms)::int AS postings, (SELECT count(*) FROM term_stats)::int AS terms,
              (SELECT count(*) FROM dataset_index)::int AS indexes, (SELECT count(*) FROM dataset_fusion)::int AS fusion,
              (SELECT count(*) FROM events)::int AS events`,
    );
    return rows[0] as Record<string, number>;
  }

  beforeAll(async () => {
    openai = await startFakeOpenAI(8);
    openai.dimensionsOf = { 'other-embedder': 12 };
    t = await startTestApp({ ...openAiEnv(openai), CHUNK_TOKENS: '32', CHUNK_OVERLAP_TOKENS: '8' });
    key = await t.createApiKey();
    other = await t.createApiKey();
    sourceId = await createDataset(t.http, key, {
      name: 'Lamp manuals',
      description: 'How to keep lamps',
      metadata: { team: 'lighthouse', year: 2026 },
    });
    const text = await t.http
      .post(`/v1/datasets/${sourceId}/documents`)
      .set(bearer(key))
      .send({ content: NOTES, metadata: { title: 'Harbour notes', kind: 'log' } })
      .expect(201);
    const guide = await t.http
      .post(`/v1/datasets/${sourceId}/documents`)
      .set(bearer(key))
      .attach('file', Buffer.from(GUIDE), 'kestrel-lamps.md')
      .field('metadata', JSON.stringify({ category: 'guide' }))
      .expect(201);
    const broken = await t.http
      .post(`/v1/datasets/${sourceId}/documents`)
      .set(bearer(key))
      .attach('file', Buffer.from('%PDF-1.4\nnot really a pdf'), 'broken.pdf')
      .expect(201);
    for (const response of [text, guide, broken]) {
      await waitForDocument(t.http, key, sourceId, (response.body as DocumentBody).document_id);
    }
    archive = (await exportOf(sourceId).expect(200)).body as Buffer;
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    await openai?.close();
  });

  it('streams a gzip archive named after the dataset, manifest first and end last', async () => {
    const response = await exportOf(sourceId).expect(200);
    expect(response.headers['content-type']).toBe('application/gzip');
    expect(response.headers['content-disposition']).toContain(`${sourceId}.dss.ndjson.gz`);
    const records = recordsOf(response.body as Buffer);
    expect(records[0]).toMatchObject({
      type: 'manifest',
      format: 'dss-dataset-archive',
      version: 1,
      source: { dataset_id: sourceId },
      embedding: { model: 'fake-embedder', dimensions: 8 },
    });
    expect(records[1]).toMatchObject({
      type: 'dataset',
      name: 'Lamp manuals',
      description: 'How to keep lamps',
      metadata: { team: 'lighthouse', year: 2026 },
      language: 'english',
    });
    const documents = records.filter((record) => record.type === 'document');
    const chunks = records.filter((record) => record.type === 'chunk');
    expect(documents.map((record) => record.status).sort()).toEqual(['failed', 'ready', 'ready']);
    expect(chunks.length).toBeGreaterThan(4);
    expect(chunks.every((chunk) => typeof chunk.vector === 'string')).toBe(true);
    // The guide's chunks are indexed with its headings; the notes' with their title.
    const contexts = chunks.map((chunk) => chunk.context as string);
    expect(contexts.some((context) => context.includes('Trimming the wick'))).toBe(true);
    expect(contexts.some((context) => context.startsWith('Harbour notes\nHarbour notes'))).toBe(true);
    expect(records.at(-1)).toEqual({ type: 'end', documents: 3, chunks: chunks.length });
    expect((records[0].counts as { chunks: number }).chunks).toBe(chunks.length);
  });

  it('restores a dataset with the same index, searches and statuses, embedding nothing again', async () => {
    const embedded = openai.inputs.length;
    const response = await importOf(archive, key, t, '?name=Lamp%20manuals%20restored').expect(201);
    const copyId = response.body.id as string;
    expect(response.headers.location).toBe(`/v1/datasets/${copyId}`);
    expect(copyId).not.toBe(sourceId);
    expect(response.body).toMatchObject({
      name: 'Lamp manuals restored',
      description: 'How to keep lamps',
      metadata: { team: 'lighthouse', year: 2026 },
      document_count: 3,
      import: { source_dataset_id: sourceId, documents: 3, chunks_without_vector: 0, vectors: 'restored' },
    });
    expect(openai.inputs.length).toBe(embedded);
    const [source, copy] = [await indexOf(t, sourceId), await indexOf(t, copyId)];
    expect(copy.state).toEqual(source.state);
    expect(copy.terms).toEqual(source.terms);
    expect(copy.postings).toEqual(source.postings);
    expect(copy.chunks).toEqual(source.chunks);
    expect(copy.chunks.length).toBe(response.body.import.chunks);
    expect(await documentsOf(copyId)).toEqual(await documentsOf(sourceId));
    expect(await searchAll(t, key, copyId)).toEqual(await searchAll(t, key, sourceId));
    // New ids throughout: the two datasets share no document.
    const { rows } = await t.sql.query(
      `SELECT count(*)::int AS n FROM documents a JOIN documents b ON a.id = b.id
        WHERE a.dataset_id = $1 AND b.dataset_id = $2`,
      [sourceId, copyId],
    );
    expect(rows[0].n).toBe(0);
    // The original file comes back byte for byte.
    const listed = await t.http
      .get(`/v1/datasets/${copyId}/documents?limit=100`)
      .set(bearer(key))
      .expect(200);
    const guide = (listed.body.documents as DocumentBody[]).find(
      (document) => document.filename === 'kestrel-lamps.md',
    );
    const file = await t.http
      .get(`/v1/datasets/${copyId}/documents/${guide!.document_id}/file`)
      .set(bearer(key))
      .buffer(true)
      .parse(binary)
      .expect(200);
    expect((file.body as Buffer).toString()).toBe(GUIDE);
    // The searches embedded their queries; no passage was embedded again.
    expect(openai.inputs.slice(embedded).filter((input) => !QUERIES.includes(input))).toEqual([]);
  });

  it('carries the chunks a failed replacement left searchable, with the failure', async () => {
    const datasetId = await createDataset(t.http, key, { name: 'Replaced lamps' });
    const created = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .send({ content: 'The kestrel lamp burns whale oil until dawn.' })
      .expect(201);
    const documentId = (created.body as DocumentBody).document_id;
    await waitForDocument(t.http, key, datasetId, documentId);
    await t.http
      .put(`/v1/datasets/${datasetId}/documents/${documentId}`)
      .set(bearer(key))
      .attach('file', Buffer.from('%PDF-1.4\nnot really a pdf'), 'broken.pdf')
      .expect(200);
    expect((await waitForDocument(t.http, key, datasetId, documentId)).status).toBe('failed');
    const copied = await importOf(
      (await exportOf(datasetId).expect(200)).body as Buffer,
      key,
      t,
      '?name=Copied',
    ).expect(201);
    const copyId = copied.body.id as string;
    const [document] = (await t.http.get(`/v1/datasets/${copyId}/documents`).set(bearer(key)).expect(200))
      .body.documents as DocumentBody[];
    expect(document).toMatchObject({ status: 'failed', chunks_created: 1, filename: 'broken.pdf' });
    const found = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: copyId, query: 'whale oil', mode: 'keyword' })
      .expect(200);
    expect(found.body.results.map((result: { document_id: string }) => result.document_id)).toEqual([
      document.document_id,
    ]);
  });

  it('answers a repeated Idempotency-Key with the first import, creating nothing twice', async () => {
    const send = () =>
      importOf(archive, other, t, '?name=Replayed%20lamps').set('Idempotency-Key', 'transfer-replay-1');
    const first = await send().expect(201);
    const before = await rowCounts();
    const again = await send().expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect(await rowCounts()).toEqual(before);
  });

  it('imports into another account under another name, and refuses a name taken there', async () => {
    const first = await importOf(archive, other, t, '?name=Borrowed%20lamps').expect(201);
    expect(first.body).toMatchObject({ name: 'Borrowed lamps', document_count: 3 });
    expect(first.body.id).not.toBe(sourceId);
    const before = await rowCounts();
    const again = await importOf(archive, other, t, '?name=Borrowed%20lamps').expect(409);
    expect(again.body.code).toBe('dataset_name_conflict');
    expect(await rowCounts()).toEqual(before);
  });

  it('re-embeds in the background when the archive is of another model', async () => {
    const u = await startTestApp({
      ...openAiEnv(openai),
      EMBEDDING_MODEL: 'other-embedder',
      REEMBED_POLL_SECONDS: '1',
    });
    try {
      const owner = await u.createApiKey();
      const response = await importOf(archive, owner, u).expect(201);
      const chunks = response.body.import.chunks as number;
      expect(response.body.import).toMatchObject({ vectors: 'embedding', chunks_without_vector: chunks });
      const datasetId = response.body.id as string;
      const state = async () =>
        (
          await u.sql.query(
            `SELECT i.embedding_model, i.embedding_dimensions,
                    (SELECT count(*)::int FROM chunks c WHERE c.dataset_seq = i.dataset_seq AND c.embedding IS NOT NULL) AS embedded
               FROM dataset_index i WHERE i.dataset_id = $1`,
            [datasetId],
          )
        ).rows[0] as {
          embedding_model: string | null;
          embedding_dimensions: number | null;
          embedded: number;
        };
      await until(async () => (await state()).embedding_model === 'other-embedder', 30_000);
      expect(await state()).toEqual({
        embedding_model: 'other-embedder',
        embedding_dimensions: 12,
        embedded: chunks,
      });
      // Keyword statistics are the source's: only the vectors were made again.
      expect((await indexOf(u, datasetId)).terms).toEqual((await indexOf(t, sourceId)).terms);
    } finally {
      await u.close();
    }
  }, 90_000);

  describe('refuses a hostile or broken archive, leaving nothing behind', () => {
    const base = () => recordsOf(archive);
    const firstOf = (records: ArchiveRecord[], type: string) =>
      records.findIndex((record) => record.type === type);
    const lastChunk = (records: ArchiveRecord[]) => records.map((record) => record.type).lastIndexOf('chunk');
    const readyText = (records: ArchiveRecord[]) =>
      records.findIndex((record) => record.type === 'document' && record.filename === null);

    const cases: [string, string, () => Buffer][] = [
      [
        'a format version it does not know',
        'archive_version_unsupported',
        () => pack(base().map((record) => (record.type === 'manifest' ? { ...record, version: 2 } : record))),
      ],
      ['bytes that are not gzip', 'archive_corrupt', () => Buffer.from('{"type":"manifest"}\n')],
      [
        'a gzip stream cut in the middle',
        'archive_truncated',
        () => archive.subarray(0, Math.floor(archive.length / 2)),
      ],
      ['an archive without its end record', 'archive_truncated', () => pack(base().slice(0, -1))],
      [
        'a document with fewer chunks than its header says',
        'archive_truncated',
        () => {
          const records = base();
          records.splice(lastChunk(records), 1);
          return pack(records);
        },
      ],
      [
        'a file larger than its header says',
        'archive_size_mismatch',
        () =>
          pack(
            base().map((record) =>
              record.type === 'document' && record.filename === 'kestrel-lamps.md'
                ? { ...record, content_base64: Buffer.from(`${GUIDE}\nmore`).toString('base64') }
                : record,
            ),
          ),
      ],
      [
        'a file name with ".." steps',
        'archive_unsafe_path',
        () =>
          pack(
            base().map((record) =>
              record.filename === 'kestrel-lamps.md'
                ? { ...record, filename: '../../etc/kestrel.md' }
                : record,
            ),
          ),
      ],
      [
        'an absolute file name',
        'archive_unsafe_path',
        () =>
          pack(
            base().map((record) =>
              record.filename === 'kestrel-lamps.md' ? { ...record, filename: '/etc/kestrel.md' } : record,
            ),
          ),
      ],
      [
        'more documents than a dataset holds',
        'archive_over_limits',
        () =>
          pack(
            base().map((record) =>
              record.type === 'manifest' ? { ...record, counts: { documents: 10_001, chunks: 1 } } : record,
            ),
          ),
      ],
      [
        'text over the upload limit',
        'archive_over_limits',
        () => {
          const records = base();
          const at = readyText(records);
          records[at] = withContent(records[at], Buffer.from('x'.repeat(1_000_001)));
          return pack(records);
        },
      ],
      [
        'metadata over the key limit',
        'archive_over_limits',
        () => {
          const records = base();
          const at = readyText(records);
          records[at] = {
            ...records[at],
            metadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])),
          };
          return pack(records);
        },
      ],
      [
        'a vector of the wrong dimension',
        'archive_invalid_vector',
        () => {
          const records = base();
          const at = firstOf(records, 'chunk');
          records[at] = { ...records[at], vector: vectorOf([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]) };
          return pack(records);
        },
      ],
      [
        'a vector holding NaN',
        'archive_invalid_vector',
        () => {
          const records = base();
          const at = lastChunk(records); // everything before it is already written
          records[at] = { ...records[at], vector: vectorOf([0.1, Number.NaN, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]) };
          return pack(records);
        },
      ],
      [
        'a document id twice',
        'archive_duplicate_id',
        () => {
          const records = base();
          const first = records[firstOf(records, 'document')];
          const end = records.pop()!;
          return pack([...records, { ...first, chunks: 0, status: 'processing' }, end]);
        },
      ],
      [
        'a chunk of an unknown document',
        'archive_unknown_document',
        () => {
          const records = base();
          const at = lastChunk(records);
          records[at] = { ...records[at], document_id: 'doc_notInTheArchive0000000' };
          return pack(records);
        },
      ],
      [
        'text PostgreSQL cannot store',
        'archive_corrupt',
        () => {
          const records = base();
          const at = readyText(records);
          records[at] = { ...records[at], metadata: { title: 'nul \u0000 here' } };
          return pack(records);
        },
      ],
    ];

    it.each(cases)('%s: %s', async (name, code, make) => {
      const before = await rowCounts();
      // A name of its own: the archive's is taken in this account by the source.
      const response = await importOf(make(), key, t, `?name=${encodeURIComponent(name)}`);
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.status).toBeLessThan(500);
      expect(response.body).toMatchObject({ code });
      expect(typeof response.body.error).toBe('string');
      expect(await rowCounts()).toEqual(before);
    });
  });

  describe('access', () => {
    it('answers 404 dataset_not_found for another account’s private dataset', async () => {
      const response = await exportOf(sourceId, other).expect(404);
      expect(JSON.parse((response.body as Buffer).toString())).toMatchObject({ code: 'dataset_not_found' });
    });

    it('answers 401 without a credential', async () => {
      const response = await t.http.get(`/v1/datasets/${sourceId}/export`).expect(401);
      expect(response.body).toMatchObject({ code: 'authentication_required' });
    });

    it('exports another account’s public dataset', async () => {
      const publicId = await createDataset(t.http, key, { is_public: true });
      const response = await exportOf(publicId, other).expect(200);
      expect(recordsOf(response.body as Buffer).at(-1)).toEqual({ type: 'end', documents: 0, chunks: 0 });
    });

    it('refuses a body that is not an archive’s media type', async () => {
      const response = await t.http
        .post('/v1/datasets/import')
        .set(bearer(key))
        .set('Content-Type', 'application/json')
        .send('{}')
        .expect(415);
      expect(response.body.code).toBe('unsupported_media_type');
    });
  });

  it('round-trips from the command line, and exits 1 with the code on a refusal', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'dss-transfer-'));
    try {
      const file = join(folder, 'lamps.dss.ndjson.gz');
      const cli = (...args: string[]) =>
        run(process.execPath, ['dist/cli.js', ...args, '--url', t.url, '--api-key', key.api_key], {
          env: { PATH: process.env.PATH ?? '' },
        });
      const exported = JSON.parse((await cli('datasets', 'export', sourceId, '--out', file)).stdout);
      expect(exported).toMatchObject({ dataset_id: sourceId, out: file, documents: 3 });
      expect(recordsOf(await readFile(file)).at(-1)).toMatchObject({ type: 'end', documents: 3 });
      const imported = JSON.parse((await cli('datasets', 'import', file, '--name', 'From the shell')).stdout);
      expect(imported).toMatchObject({
        name: 'From the shell',
        import: { documents: 3, vectors: 'restored' },
      });
      expect(await searchAll(t, key, imported.id as string)).toEqual(await searchAll(t, key, sourceId));

      const broken = join(folder, 'broken.gz');
      await writeFile(broken, (await readFile(file)).subarray(0, 200));
      const refused = await cli('datasets', 'import', broken).then(
        () => null,
        (error: { code: number; stderr: string }) => error,
      );
      expect(refused?.code).toBe(1);
      expect(JSON.parse(refused!.stderr)).toMatchObject({ code: 'archive_truncated' });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }, 60_000);
});
