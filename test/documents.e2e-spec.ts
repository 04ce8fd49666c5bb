import { readFile } from 'node:fs/promises';
import net from 'node:net';
import zlib from 'node:zlib';
import sharp from 'sharp';
import type { Test } from 'supertest';
import { addDocument, createDataset, type DocumentBody, waitForDocument } from './utils/documents.js';
import { blackPng } from './utils/png.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';
import { itOnOnePostgres } from './utils/topology.js';

const FIXTURES = '../shared/fixtures';

describe('Documents API', () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    t = await startTestApp();
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
  });
  afterAll(() => t.close());

  const documents = (id = datasetId) => `/v1/datasets/${id}/documents`;
  const uploadText = (content: unknown, metadata?: object, id = datasetId) =>
    t.http
      .post(documents(id))
      .set(bearer(key))
      .send({ content, ...(metadata ? { metadata } : {}) });

  const datasetCounts = async (id = datasetId) => {
    // The dataset's seq first: on Citus a statement naming it runs in the dataset's shard.
    const [dataset] = (await t.sql.query('SELECT seq, document_count FROM datasets WHERE id = $1', [id]))
      .rows;
    const { rows } = await t.sql.query(
      `SELECT i.chunk_count::int, i.total_chunk_length::int,
              (SELECT count(*)::int FROM documents WHERE dataset_seq = $1) AS documents,
              (SELECT count(*)::int FROM chunks c WHERE c.dataset_seq = $1) AS chunks,
              (SELECT coalesce(sum(c.length), 0)::int FROM chunks c WHERE c.dataset_seq = $1) AS length
         FROM dataset_index i WHERE i.dataset_seq = $1`,
      [dataset.seq],
    );
    return { document_count: dataset.document_count, ...rows[0] } as Record<string, number>;
  };

  it('accepts text as JSON: 201 in processing, then ready with its chunks', async () => {
    const response = await uploadText('Hamburgers are delicious. I love fuzzy blankets.', {
      category: 'food',
    }).expect(201);
    expect(response.body).toEqual({
      document_id: expect.stringMatching(/^doc_[0-9A-Za-z]{22}$/),
      dataset_id: datasetId,
      size_bytes: 48,
      status: 'processing',
      created_at: expect.any(String),
      metadata: { category: 'food' },
    });
    const done = await waitForDocument(t.http, key, datasetId, response.body.document_id);
    expect(done).toMatchObject({
      status: 'ready',
      chunks_created: 1,
      processing_time_ms: expect.any(Number),
    });
    expect(Date.parse(done.processed_at as string)).toBeGreaterThanOrEqual(
      Date.parse(response.body.created_at),
    );
    expect(done).not.toHaveProperty('progress');
  });

  it('counts the time to index a document in its processing time and processed_at', async () => {
    // Chunks cannot be written while this transaction holds the table: the document waits to be indexed.
    const lock = await t.sql.connect();
    let released = 0;
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE chunks IN SHARE MODE');
      const response = await uploadText('Indexing takes its time too.').expect(201);
      const stage = async () => {
        const document = await t.http.get(`${documents()}/${response.body.document_id}`).set(bearer(key));
        return (document.body as DocumentBody).progress?.stage;
      };
      await until(async () => (await stage()) === 'indexing');
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await lock.query('COMMIT');
      released = Date.now();
      const done = await waitForDocument(t.http, key, datasetId, response.body.document_id);
      expect(done.status).toBe('ready');
      expect(done.processing_time_ms).toBeGreaterThanOrEqual(1_500);
      expect(Date.parse(done.processed_at as string)).toBeGreaterThanOrEqual(released - 50);
      const started = Date.parse(response.body.created_at);
      expect(Date.parse(done.processed_at as string) - started).toBeCloseTo(
        done.processing_time_ms as number,
        -1,
      );
    } finally {
      if (!released) await lock.query('ROLLBACK');
      lock.release();
    }
  });

  // Its trigger holds a statement back: Citus refuses triggers on distributed tables.
  itOnOnePostgres(
    'takes an upload into a dataset at once while a document of it is being indexed',
    async () => {
      // Indexing is held once its chunks are written, just before it updates the dataset's counts: by
      // then the chunks' foreign keys hold key-share locks on the dataset's row. A trigger of this test
      // makes that update wait for an advisory lock this test holds.
      const HOLD = 4_242;
      await t.sql.query(`
      CREATE FUNCTION test_hold_chunk_counts() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF current_query() LIKE '%chunk_count = chunk_count%' THEN PERFORM pg_advisory_xact_lock_shared(${HOLD}); END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER test_hold_chunk_counts BEFORE UPDATE ON dataset_index
        FOR EACH STATEMENT EXECUTE FUNCTION test_hold_chunk_counts();`);
      const holder = await t.sql.connect();
      let held = true;
      const release = async () => {
        if (held) await holder.query('SELECT pg_advisory_unlock($1)', [HOLD]);
        held = false;
      };
      try {
        await holder.query('SELECT pg_advisory_lock($1)', [HOLD]);
        const indexing = await uploadText('A document being indexed.').expect(201);
        await until(async () => {
          const { rows } = await t.sql.query(
            `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
            [HOLD],
          );
          return rows[0].n === 1;
        });
        // Released after 5 s whatever happens, so that an upload waiting for indexing fails the test below.
        const timer = setTimeout(() => void release(), 5_000);
        const started = performance.now();
        const [upload, patch] = await Promise.all([
          uploadText('Uploaded meanwhile.'),
          t.http.patch(`/v1/datasets/${datasetId}`).set(bearer(key)).send({ description: 'meanwhile' }),
        ]);
        expect([upload.status, patch.status]).toEqual([201, 200]);
        expect(performance.now() - started).toBeLessThan(2_000);
        clearTimeout(timer);
        await release();
        for (const id of [indexing.body.document_id, upload.body.document_id]) {
          expect((await waitForDocument(t.http, key, datasetId, id)).status).toBe('ready');
        }
        const counts = await datasetCounts();
        expect(counts.document_count).toBe(counts.documents);
        expect(counts.chunk_count).toBe(counts.chunks);
        expect(counts.total_chunk_length).toBe(counts.length);
      } finally {
        await release();
        holder.release();
        await t.sql.query(
          'DROP TRIGGER test_hold_chunk_counts ON dataset_index; DROP FUNCTION test_hold_chunk_counts()',
        );
      }
    },
    30_000,
  );

  it('accepts a file as multipart with JSON metadata, and keeps the original file name', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', await readFile(`${FIXTURES}/txt/fake-text.txt`), 'fake-text.txt')
      .field('metadata', JSON.stringify({ title: 'Fake text', tags: ['a', 'b'] }))
      .expect(201);
    expect(response.body).toMatchObject({
      filename: 'fake-text.txt',
      size_bytes: 169,
      metadata: { title: 'Fake text', tags: ['a', 'b'] },
    });
    const done = await waitForDocument(t.http, key, datasetId, response.body.document_id);
    expect(done.status).toBe('ready');
  });

  it('answers 413 file_too_large for a file over 10 MB and stores nothing', async () => {
    const before = await datasetCounts();
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', Buffer.alloc(10 * 1024 * 1024 + 1, 'a'), 'big.txt')
      .expect(413);
    expect(response.body).toMatchObject({
      code: 'file_too_large',
      details: { limit_bytes: 10 * 1024 * 1024 },
    });
    expect((await datasetCounts()).documents).toBe(before.documents);
  });

  it('answers 413 content_too_large for text over 1,000,000 characters', async () => {
    const response = await uploadText('é'.repeat(1_000_001)).expect(413);
    expect(response.body).toMatchObject({
      code: 'content_too_large',
      details: { limit_characters: 1_000_000 },
    });
    await uploadText('x'.repeat(1_000_000)).expect(201);
  });

  it('reads a text of over 1,000,000 characters however its JSON escapes them (12 MB as \\uXXXX pairs)', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send(`{"content": "${'\\ud83d\\ude00'.repeat(1_000_001)}"}`)
      .expect(413);
    expect(response.body.code).toBe('content_too_large');
  });

  it('answers 400 invalid_metadata for JSON content with a nested key that breaks the key rules', async () => {
    for (const metadata of [{ a: { $x: 1 } }, { a: { '': 1 } }, { a: { b: null } }]) {
      const response = await uploadText('Nested metadata.', metadata).expect(400);
      expect(response.body).toMatchObject({ code: 'invalid_metadata', details: { field: 'metadata' } });
    }
  });

  it.each([
    ['empty', ''],
    ['only white space', '  \n\t '],
    ['only zero-width spaces', '\u200b\u200b\u200b'],
    // Neither white space nor format characters, so each alone was accepted and indexed as a blank chunk.
    ['only the Hangul filler U+3164', '\u3164'],
    ['only Hangul fillers and the combining grapheme joiner', '\u115f\u1160\uffa0\u034f'],
    ['only Khmer inherent vowels and a variation selector', '\u17b4\u17b5\ufe0f'],
    ['only the braille blank and the object replacement character', '\u2800 \ufffc'],
    ['missing', undefined],
    ['not a string', 42],
    // Both were stored altered (U+0000 dropped, the surrogate as U+FFFD), with 201.
    ['holding U+0000', 'abc\u0000def'],
    ['holding an unpaired surrogate', 'abc \ud800 def'],
  ])('answers 400 validation_error for content that is %s', async (_case, content) => {
    const response = await uploadText(content).expect(400);
    expect(response.body).toMatchObject({ code: 'validation_error', details: { field: 'content' } });
  });

  it('answers 415 unsupported_file_type naming the supported types', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', Buffer.from('MZ\x90\x00binary'), 'tool.exe')
      .expect(415);
    expect(response.body.code).toBe('unsupported_file_type');
    expect(response.body.details.supported_extensions).toEqual(
      expect.arrayContaining(['.pdf', '.docx', '.png', '.py']),
    );
  });

  it('reads binary content by what it is, and refuses an unsupported format behind a text extension', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', await readFile(`${FIXTURES}/docx/tables.docx`), 'notes.txt')
      .expect(201);
    // A DOCX named .txt is recognised by its content and read as the DOCX it is.
    expect(response.body.filename).toBe('notes.txt');
    const gif = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1');
    const refused = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', gif, 'image.txt')
      .expect(415);
    expect(refused.body.code).toBe('unsupported_file_type');
  });

  it.each([
    ['gif', 'text.png', 'image/gif'],
    ['webp', 'photo.jpg', 'image/webp'],
    ['tiff', 'scan.pdf', 'image/tiff'],
  ] as const)(
    'answers 415 unsupported_file_type for %s content named %s, naming the detected type, and stores nothing',
    async (format, name, mime) => {
      const image = await sharp({ create: { width: 64, height: 32, channels: 3, background: 'white' } })
        .toFormat(format)
        .toBuffer();
      const before = await datasetCounts();
      const response = await t.http
        .post(documents())
        .set(bearer(key))
        .attach('file', image, name)
        .expect(415);
      expect(response.body).toMatchObject({
        code: 'unsupported_file_type',
        details: { detected_type: mime, reason: `content is ${mime}, which is not supported` },
      });
      expect((await datasetCounts()).documents).toBe(before.documents);
    },
  );

  it('fails an image over OCR_MAX_PIXELS with image_too_large, also past sharp’s own limit of 268,402,689 pixels', async () => {
    const sizes = [
      [10_000, 5_000],
      [16_384, 16_384],
    ];
    for (const [width, height] of sizes) {
      const response = await t.http
        .post(documents())
        .set(bearer(key))
        .attach('file', blackPng(width, height), 'large.png')
        .expect(201);
      const failed = await waitForDocument(t.http, key, datasetId, response.body.document_id);
      expect(failed).toMatchObject({
        status: 'failed',
        error: { code: 'image_too_large', details: { pixels: width * height, limit_pixels: 40_000_000 } },
      });
    }
  });

  it('fails a JSON file nested 50,000 levels deep at once with invalid_document, not after retries', async () => {
    const deep = '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000);
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', Buffer.from(deep), 'deep.json')
      .expect(201);
    // Five attempts of a transient failure take over 30 s of backoff; a permanent one ends at once.
    const failed = await waitForDocument(t.http, key, datasetId, response.body.document_id, 15_000);
    expect(failed).toMatchObject({
      status: 'failed',
      error: {
        code: 'invalid_document',
        details: { kind: 'JSON', reason: 'it nests more than 256 levels deep' },
      },
    });
  });

  it('answers 400 invalid_metadata for multipart metadata that is not a JSON object', async () => {
    for (const metadata of ['not json', '[1,2]', '{"$bad": 1}', '{"a": {"$bad": 1}}', '{"a": {"b": null}}']) {
      const response = await t.http
        .post(documents())
        .set(bearer(key))
        .attach('file', Buffer.from('hello'), 'a.txt')
        .field('metadata', metadata)
        .expect(400);
      // The same details as JSON metadata's, which the validation pipe reports.
      expect(response.body).toMatchObject({
        code: 'invalid_metadata',
        details: { field: 'metadata', errors: [{ field: 'metadata', issue: expect.any(String) }] },
      });
    }
  });

  it('answers 400 when a multipart upload has no file', async () => {
    const response = await t.http.post(documents()).set(bearer(key)).field('metadata', '{}').expect(400);
    expect(response.body).toMatchObject({ code: 'validation_error', details: { field: 'file' } });
  });

  it.each([
    [
      'a file under another field name',
      (r: Test) => r.attach('document', Buffer.from('x'), 'a.txt'),
      'document',
    ],
    [
      'two files',
      (r: Test) => r.attach('file', Buffer.from('x'), 'a.txt').attach('file', Buffer.from('y'), 'b.txt'),
      'file',
    ],
    [
      'a body cut short',
      (r: Test) =>
        r
          .set('Content-Type', 'multipart/form-data; boundary=XX')
          .send('--XX\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc'),
      'body',
    ],
  ])(
    'answers 400 validation_error naming the part for a multipart body with %s',
    async (_case, build, field) => {
      const response = await build(t.http.post(documents()).set(bearer(key))).expect(400);
      expect(response.body).toMatchObject({ code: 'validation_error', details: { field } });
    },
  );

  it('answers 400 for a file name over 255 characters, saying so', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', Buffer.from('x'), `${'n'.repeat(300)}.txt`)
      .expect(400);
    expect(response.body).toMatchObject({
      error: 'Invalid request: file name must be 1-255 characters',
      code: 'validation_error',
      details: { field: 'file', issue: 'name must be 1-255 characters' },
    });
  });

  it('answers 400 invalid_metadata for a multipart metadata part over 64 KB, as for metadata over 16 KB', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', Buffer.from('x'), 'a.txt')
      .field('metadata', 'x'.repeat(70_000))
      .expect(400);
    expect(response.body).toMatchObject({
      code: 'invalid_metadata',
      details: { field: 'metadata', issue: 'must be at most 16384 bytes as JSON' },
    });
  });

  it.each(['gzip', 'x-unknown'])(
    'answers 415 for a multipart upload in Content-Encoding %s, which uploads are not read in',
    async (coding) => {
      const body =
        '--XX\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc\r\n--XX--\r\n';
      const response = await t.http
        .post(documents())
        .set(bearer(key))
        .set('Content-Type', 'multipart/form-data; boundary=XX')
        .set('Content-Encoding', coding)
        .send(coding === 'gzip' ? zlib.gzipSync(body) : body)
        .expect(415);
      expect(response.body).toMatchObject({
        code: 'unsupported_media_type',
        details: { content_encoding: coding, allowed: ['identity'] },
      });
    },
  );

  it('takes a multipart upload that says Content-Encoding: identity', async () => {
    await t.http
      .post(documents())
      .set(bearer(key))
      .set('Content-Encoding', 'identity')
      .attach('file', Buffer.from('Sent as it is.'), 'identity.txt')
      .expect(201);
  });

  it('takes an upload the client abandons as its fault (request_aborted), not a 500, storing nothing', async () => {
    const own = await createDataset(t.http, key);
    const before = t.output().length;
    const { port } = new URL(t.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const head = '--XX\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n';
    socket.write(
      [
        `POST /v1/datasets/${own}/documents HTTP/1.1`,
        'Host: 127.0.0.1',
        `Authorization: Bearer ${key.api_key}`,
        'Content-Type: multipart/form-data; boundary=XX',
        'Content-Length: 5000000',
        '',
        head + 'x'.repeat(100_000),
      ].join('\r\n'),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.destroy();
    // pino-http's line for this request, the only one to this dataset's documents: "request aborted".
    await t.waitForOutput(`"url":"/v1/datasets/${own}/documents"`);
    expect(t.output().slice(before)).toMatch(/"msg":"request aborted"/);
    // The request's error is handled by then; a 500 would have been logged with its stack.
    await t.http.get('/health').expect(200);
    expect(t.output().slice(before)).not.toContain('internal_error');
    const listed = await t.http.get(`/v1/datasets/${own}/documents`).set(bearer(key)).expect(200);
    expect(listed.body.total).toBe(0);
  });

  it('answers 422 document_limit_reached when the dataset holds 10,000 documents', async () => {
    const full = await createDataset(t.http, key);
    await t.sql.query('UPDATE datasets SET document_count = 10000 WHERE id = $1', [full]);
    const response = await uploadText('one too many', undefined, full).expect(422);
    expect(response.body).toMatchObject({ code: 'document_limit_reached', details: { limit: 10000 } });
  });

  it('answers 404 for a dataset of another account and for a missing document', async () => {
    const other = await t.createApiKey();
    const theirs = await createDataset(t.http, other);
    expect((await uploadText('x', undefined, theirs).expect(404)).body.code).toBe('dataset_not_found');
    const missing = await t.http
      .get(`${documents()}/doc_0000000000000000000000`)
      .set(bearer(key))
      .expect(404);
    expect(missing.body).toMatchObject({
      code: 'document_not_found',
      details: { document_id: 'doc_0000000000000000000000' },
    });
  });

  it('lists documents in the envelope, filtered by status, newest first', async () => {
    const listed = await createDataset(t.http, key);
    const good = await uploadText('A fine document.', undefined, listed).expect(201);
    const bad = await t.http
      .post(documents(listed))
      .set(bearer(key))
      .attach('file', await readFile(`${FIXTURES}/pdf/encrypted-password.pdf`), 'locked.pdf')
      .expect(201);
    await waitForDocument(t.http, key, listed, good.body.document_id);
    await waitForDocument(t.http, key, listed, bad.body.document_id);

    const all = await t.http.get(documents(listed)).set(bearer(key)).expect(200);
    expect(all.body).toMatchObject({ total: 2, limit: 20, offset: 0, has_more: false });
    expect(all.body.documents.map((d: { document_id: string }) => d.document_id)).toEqual([
      bad.body.document_id,
      good.body.document_id,
    ]);
    expect(Object.keys(all.body.documents[1]).sort()).toEqual(
      [
        'chunks_created',
        'created_at',
        'dataset_id',
        'document_id',
        'metadata',
        'size_bytes',
        'status',
      ].sort(),
    );
    // A failed document's item says why, as get-document does: no request per document to find out.
    const got = await t.http
      .get(`${documents(listed)}/${bad.body.document_id}`)
      .set(bearer(key))
      .expect(200);
    expect(got.body.error).toMatchObject({ code: 'invalid_pdf', details: { reason: 'encrypted' } });
    expect(all.body.documents[0]).toEqual({
      document_id: bad.body.document_id,
      dataset_id: listed,
      filename: 'locked.pdf',
      size_bytes: expect.any(Number),
      status: 'failed',
      created_at: expect.any(String),
      metadata: {},
      error: got.body.error,
    });
    const failed = await t.http
      .get(documents(listed))
      .query({ status: 'failed' })
      .set(bearer(key))
      .expect(200);
    expect(failed.body.documents).toEqual([
      expect.objectContaining({ document_id: bad.body.document_id, error: got.body.error }),
    ]);
    await t.http.get(documents(listed)).query({ status: 'done' }).set(bearer(key)).expect(400);
  });

  it('shows a failed document with its error code, message and details', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', await readFile(`${FIXTURES}/pdf/encrypted-password.pdf`), 'locked.pdf')
      .expect(201);
    const failed = await waitForDocument(t.http, key, datasetId, response.body.document_id);
    expect(failed).toMatchObject({
      status: 'failed',
      error: {
        code: 'invalid_pdf',
        message: expect.stringMatching(/encrypted/i),
        details: { reason: 'encrypted' },
      },
    });
    expect(failed).not.toHaveProperty('chunks_created');
  });

  it('fails a file of invisible characters alone as no_text_extracted (it was ready, one blank chunk)', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', Buffer.from('\u200b\u200c\u2060\n'.repeat(50)), 'blank.txt')
      .expect(201);
    const failed = await waitForDocument(t.http, key, datasetId, response.body.document_id);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'no_text_extracted' } });
  });

  it('fails an empty file of every type, and a text file of white space, as no_text_extracted', async () => {
    const textNames = ['e.txt', 'e.md', 'e.csv', 'e.json', 'e.xml', 'e.yaml', 'e.py'];
    const uploads: [string, Buffer][] = [
      ...[...textNames, 'e.pdf', 'e.docx', 'e.pptx', 'e.png', 'e.jpg'].map((name): [string, Buffer] => [
        name,
        Buffer.alloc(0),
      ]),
      ...textNames.map((name): [string, Buffer] => [`blank-${name}`, Buffer.from(' \n\t\r\n\u200b ')]),
      ['blank-utf16.json', Buffer.from('\ufeff  \n', 'utf16le')],
      // Blank values between a format's own delimiters: nothing to read either.
      ['delimiters.csv', Buffer.from(' , \n , \n')],
      ['blank-header.csv', Buffer.from(' , \n')],
      ['fillers.csv', Buffer.from('\u3164,\u3164\n\u3164,\u3164\n')],
      ['fillers.json', Buffer.from('{"\u3164": "\u3164", "a": [" ", {"b": ""}]}')],
    ];
    const results = await Promise.all(
      uploads.map(async ([name, content]) => {
        const response = await t.http
          .post(documents())
          .set(bearer(key))
          .attach('file', content, name)
          .expect(201);
        const done = await waitForDocument(t.http, key, datasetId, response.body.document_id);
        return [name, done.status, done.error?.code];
      }),
    );
    expect(results).toEqual(uploads.map(([name]) => [name, 'failed', 'no_text_extracted']));
  });

  it('fails a file of Hangul fillers alone as no_text_extracted (it was ready, one blank chunk)', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', Buffer.from('\u3164'), 'filler.txt')
      .expect(201);
    const failed = await waitForDocument(t.http, key, datasetId, response.body.document_id);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'no_text_extracted' } });
  });

  it('deletes a document with its chunks, postings and bytes, keeping the counts exact', async () => {
    const own = await createDataset(t.http, key);
    const response = await uploadText('Delete me. '.repeat(300), undefined, own).expect(201);
    const id = response.body.document_id;
    await waitForDocument(t.http, key, own, id);
    expect((await datasetCounts(own)).chunk_count).toBeGreaterThan(1);

    await t.http
      .delete(`${documents(own)}/${id}`)
      .set(bearer(key))
      .expect(204);
    expect(await datasetCounts(own)).toEqual({
      document_count: 0,
      chunk_count: 0,
      total_chunk_length: 0,
      documents: 0,
      chunks: 0,
      length: 0,
    });
    const { rows } = await t.sql.query(
      `SELECT (SELECT count(*) FROM document_sources WHERE document_id = $1)::int AS sources,
              (SELECT count(*) FROM chunk_terms WHERE dataset_seq = (SELECT seq FROM datasets WHERE id = $2))::int AS postings`,
      [id, own],
    );
    expect(rows[0]).toEqual({ sources: 0, postings: 0 });
    await t.http
      .get(`${documents(own)}/${id}`)
      .set(bearer(key))
      .expect(404);
  });

  it('keeps document_count exact under concurrent uploads and deletes', async () => {
    const busy = await createDataset(t.http, key);
    const first = await Promise.all(
      Array.from({ length: 12 }, (_, i) => uploadText(`Document ${i}.`, undefined, busy)),
    );
    const ids = first.map((r) => r.body.document_id as string);
    await Promise.all([
      ...ids.slice(0, 6).map((id) => t.http.delete(`${documents(busy)}/${id}`).set(bearer(key))),
      ...Array.from({ length: 8 }, (_, i) => uploadText(`More ${i}.`, undefined, busy)),
    ]);
    const counts = await datasetCounts(busy);
    expect(counts.document_count).toBe(14);
    expect(counts.documents).toBe(14);
    const dataset = await t.http.get(`/v1/datasets/${busy}`).set(bearer(key)).expect(200);
    expect(dataset.body.document_count).toBe(14);
  });

  it('reprocesses a ready document, replacing its chunks without double-counting them', async () => {
    const own = await createDataset(t.http, key);
    const response = await uploadText('Reprocess me. '.repeat(200), undefined, own).expect(201);
    const id = response.body.document_id;
    const first = await waitForDocument(t.http, key, own, id);
    const before = await datasetCounts(own);

    const restarted = await t.http
      .post(`${documents(own)}/${id}/reprocess`)
      .set(bearer(key))
      .expect(200);
    expect(restarted.body).toMatchObject({ status: 'processing', progress: { stage: 'upload', percent: 0 } });
    const again = await waitForDocument(t.http, key, own, id);
    expect(again).toMatchObject({ status: 'ready', chunks_created: first.chunks_created });
    expect(await datasetCounts(own)).toEqual(before);
  });

  it('reprocesses a failed document, and refuses to reprocess one still processing', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', await readFile(`${FIXTURES}/pdf/encrypted-password.pdf`), 'locked.pdf')
      .expect(201);
    const id = response.body.document_id;
    await waitForDocument(t.http, key, datasetId, id);
    const withField = await t.http
      .post(`${documents()}/${id}/reprocess`)
      .set(bearer(key))
      .send({ mode: 'fast' })
      .expect(400);
    expect(withField.body).toMatchObject({ code: 'validation_error', details: { field: 'body' } });
    expect((await t.http.get(`${documents()}/${id}`).set(bearer(key)).expect(200)).body.status).toBe(
      'failed',
    );
    await t.http.post(`${documents()}/${id}/reprocess`).set(bearer(key)).send({}).expect(200);
    const conflict = await t.http.post(`${documents()}/${id}/reprocess`).set(bearer(key));
    if (conflict.status === 409) expect(conflict.body.code).toBe('document_processing');
    const again = await waitForDocument(t.http, key, datasetId, id);
    expect(again).toMatchObject({ status: 'failed', error: { code: 'invalid_pdf' } });
  });

  it('answers 409 document_processing at once to a reprocess while the document is being indexed', async () => {
    // Indexing takes the dataset's chunk lock and the document's row, then waits here to delete the
    // chunks of an earlier run: this transaction holds the table.
    const own = await createDataset(t.http, key);
    const lock = await t.sql.connect();
    let held = true;
    const release = async () => {
      if (held) await lock.query('COMMIT');
      held = false;
    };
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE chunks IN SHARE MODE');
      const response = await uploadText('Indexed while a reprocess comes in.', undefined, own).expect(201);
      const id = response.body.document_id;
      await until(async () => {
        const document = await t.http.get(`${documents(own)}/${id}`).set(bearer(key));
        return (document.body as DocumentBody).progress?.stage === 'indexing';
      });
      // Released after 5 s whatever happens: a reprocess that waited for indexing fails the test below
      // rather than holding it.
      const timer = setTimeout(() => void release(), 5_000);
      const started = performance.now();
      const conflict = await t.http.post(`${documents(own)}/${id}/reprocess`).set(bearer(key));
      const waited = performance.now() - started;
      clearTimeout(timer);
      expect(conflict.status).toBe(409);
      expect(conflict.body).toMatchObject({ code: 'document_processing', details: { document_id: id } });
      expect(waited).toBeLessThan(2_000);
      await release();
      const done = await waitForDocument(t.http, key, own, id);
      expect(done).toMatchObject({ status: 'ready', chunks_created: 1 });
    } finally {
      if (held) await lock.query('ROLLBACK');
      held = false;
      lock.release();
    }
  }, 30_000);

  it('replays a multipart upload with the same Idempotency-Key and refuses another file with it', async () => {
    const upload = (content: string, name = 'once.txt') =>
      t.http
        .post(documents())
        .set(bearer(key))
        .set('Idempotency-Key', 'upload-once')
        .attach('file', Buffer.from(content), name);
    const first = await upload('the same bytes').expect(201);
    const second = await upload('the same bytes').expect(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.document_id).toBe(first.body.document_id);
    expect((await upload('other bytes').expect(422)).body.code).toBe('idempotency_key_reused');
    const renamed = await upload('the same bytes', 'other.md').expect(422);
    expect(renamed.body.code).toBe('idempotency_key_reused');
  });

  it('keeps a UTF-8 filename sent as raw bytes, as browsers send it', async () => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .attach('file', Buffer.from('Un résumé.'), 'résumé.txt')
      .expect(201);
    expect(response.body.filename).toBe('résumé.txt');
  });

  it.each([
    ['U+0000', "filename*=UTF-8''a%00b.txt"],
    ['256 characters', `filename="${'n'.repeat(252)}.txt"`],
  ])('answers 400 validation_error for a filename with %s', async (_case, filename) => {
    const response = await t.http
      .post(documents())
      .set(bearer(key))
      .set('Content-Type', 'multipart/form-data; boundary=XX')
      .send(`--XX\r\nContent-Disposition: form-data; name="file"; ${filename}\r\n\r\ntext\r\n--XX--\r\n`)
      .expect(400);
    expect(response.body).toMatchObject({ code: 'validation_error', details: { field: 'file' } });
  });

  it('lets anonymous callers read the documents of a public dataset, and nothing else', async () => {
    const open = await createDataset(t.http, key, { is_public: true });
    const response = await uploadText('Public text.', undefined, open).expect(201);
    await t.http.get(documents(open)).expect(200);
    await t.http.get(`${documents(open)}/${response.body.document_id}`).expect(200);
    expect((await t.http.post(documents(open)).send({ content: 'x' }).expect(401)).body.code).toBe(
      'authentication_required',
    );
    expect((await t.http.get(documents()).expect(404)).body.code).toBe('dataset_not_found');
  });

  it.each(['%00', 'ds_AAAAAAAAAAAAAAAAAAAAAA%00', 'not-an-id'])(
    'answers 404 dataset_not_found for the dataset id %s on every route that takes one',
    async (id) => {
      const requests = [
        t.http.get(`/v1/datasets/${id}`),
        t.http.patch(`/v1/datasets/${id}`).send({ description: 'x' }),
        t.http.delete(`/v1/datasets/${id}`),
        t.http.get(`/v1/datasets/${id}/documents`),
        t.http.post(`/v1/datasets/${id}/documents`).send({ content: 'x' }),
        t.http.get(`/v1/datasets/${id}/documents/doc_x`),
        t.http.delete(`/v1/datasets/${id}/documents/doc_x`),
        t.http.post(`/v1/datasets/${id}/documents/doc_x/reprocess`),
      ];
      for (const request of requests) {
        const response = await request.set(bearer(key));
        expect([response.status, response.body.code]).toEqual([404, 'dataset_not_found']);
      }
    },
  );

  it('writes a document of 12,000 chunks in several statements as one: ordinals, counts and postings whole', async () => {
    const own = await createDataset(t.http, key);
    const markdown = Array.from({ length: 12_000 }, (_, i) => `# Part ${i}\n\nsection number ${i}\n`).join(
      '\n',
    );
    const uploaded = await t.http
      .post(documents(own))
      .set(bearer(key))
      .attach('file', Buffer.from(markdown), 'parts.md')
      .expect(201);
    const ready = await waitForDocument(t.http, key, own, uploaded.body.document_id, 120_000);
    expect(ready).toMatchObject({ status: 'ready', chunks_created: 12_000 });
    const { rows } = await t.sql.query(
      `SELECT count(DISTINCT ordinal)::int AS ordinals, min(ordinal) AS first, max(ordinal) AS last,
              bool_and(content = '# Part ' || ordinal || E'\n\nsection number ' || ordinal) AS in_order
         FROM chunks WHERE document_id = $1`,
      [uploaded.body.document_id],
    );
    expect(rows[0]).toEqual({ ordinals: 12_000, first: 0, last: 11_999, in_order: true });
    const counts = await datasetCounts(own);
    expect(counts.chunk_count).toBe(12_000);
    expect(counts.total_chunk_length).toBe(counts.length);
    // "section" is in every chunk: its document frequency counts all three batches.
    const { rows: df } = await t.sql.query(
      `SELECT s.df FROM term_stats s JOIN datasets d ON d.seq = s.dataset_seq WHERE d.id = $1 AND s.term = 'section'`,
      [own],
    );
    expect(df[0].df).toBe(12_000);
  }, 150_000);

  it('deletes a dataset with all its documents and chunks in one go', async () => {
    const doomed = await createDataset(t.http, key);
    const response = await uploadText('Soon gone. '.repeat(100), undefined, doomed).expect(201);
    await waitForDocument(t.http, key, doomed, response.body.document_id);
    await t.http.delete(`/v1/datasets/${doomed}`).set(bearer(key)).expect(204);
    const { rows } = await t.sql.query(
      `SELECT (SELECT count(*) FROM documents WHERE dataset_id = $1)::int AS documents,
              (SELECT count(*) FROM document_sources WHERE document_id = $2)::int AS sources,
              (SELECT count(*) FROM chunks WHERE document_id = $2)::int AS chunks`,
      [doomed, response.body.document_id],
    );
    expect(rows[0]).toEqual({ documents: 0, sources: 0, chunks: 0 });
  });
});

describe('API-only process (ROLE=api)', () => {
  it('stores uploads as processing with their progress, and processes nothing itself', async () => {
    const t = await startTestApp({ ROLE: 'api' });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const response = await t.http
        .post(`/v1/datasets/${datasetId}/documents`)
        .set(bearer(key))
        .send({ content: 'Waiting.' });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const stored = await t.http
        .get(`/v1/datasets/${datasetId}/documents/${response.body.document_id}`)
        .set(bearer(key));
      expect(stored.body).toMatchObject({ status: 'processing', progress: { stage: 'upload', percent: 0 } });
      const listed = await t.http.get(`/v1/datasets/${datasetId}/documents`).set(bearer(key)).expect(200);
      expect(listed.body.documents).toEqual([
        expect.objectContaining({ status: 'processing', progress: { stage: 'upload', percent: 0 } }),
      ]);
    } finally {
      await t.close();
    }
  });
});

describe('A pool with no connection to spare', () => {
  it('answers 503 database_unavailable with Retry-After, not 500, to requests that waited too long for one', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'none', DATABASE_POOL_SIZE: '3' });
    const lock = await t.sql.connect();
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const { document_id: documentId } = await addDocument(t.http, key, datasetId, {
        content: 'Deleted once.',
      });
      // The dataset's chunk lock, held here: each delete waits for it inside a transaction, holding one
      // of the pool's three connections, and the deletes beyond three wait for a connection.
      await lock.query('BEGIN');
      await lock.query(`SELECT pg_advisory_xact_lock(hashtextextended('dataset chunks ' || $1, 0))`, [
        datasetId,
      ]);
      const deletes = Array.from({ length: 5 }, () =>
        t.http
          .delete(`/v1/datasets/${datasetId}/documents/${documentId}`)
          .set(bearer(key))
          .then((r) => r),
      );
      await new Promise((resolve) => setTimeout(resolve, 11_000)); // the pool's 10 s wait, and a margin
      await lock.query('COMMIT');
      const responses = await Promise.all(deletes);
      const statuses = responses.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 204)).toHaveLength(1);
      expect(statuses.every((s) => [204, 404, 503].includes(s))).toBe(true);
      const refused = responses.filter((r) => r.status === 503);
      expect(refused.length).toBeGreaterThan(0);
      for (const response of refused) {
        expect(response.body).toEqual({ error: expect.any(String), code: 'database_unavailable' });
        expect(response.headers['retry-after']).toBe('1');
      }
    } finally {
      await lock.query('ROLLBACK').catch(() => undefined);
      lock.release();
      await t.close();
    }
  }, 60_000);
});
