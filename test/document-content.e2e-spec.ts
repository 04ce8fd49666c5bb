import { readFile } from 'node:fs/promises';
import { createDataset, type DocumentBody, waitForDocument } from './utils/documents.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

const FIXTURES = '../shared/fixtures';
/** A four-page PDF of the fixtures (manifest.json: `pages: 4`), with a phrase of its second page's text. */
const PDF = 'pdf/pdflatex-4-pages.pdf';
const PDF_NAME = 'Résumé (4 pages).pdf';

interface Chunk {
  chunk_id: string;
  chunk_index: number;
  content: string;
  char_start: number;
  char_end: number;
  page: number | null;
  token_count: number;
}

interface TextPage {
  document_id: string;
  text: string;
  offset: number;
  next_offset: number | null;
  total_characters: number;
  pages: { page: number; char_start: number; char_end: number }[] | null;
}

/**
 * Paragraphs of short sentences, apart by blank space of several kinds: many chunks at the spec's
 * small chunk size, each overlapping the one before, so that they cover the whole text.
 */
const PARAGRAPHS = Array.from({ length: 6 }, (_, p) =>
  Array.from({ length: 8 }, (_, s) => `Keeper ${p}.${s} lit the lamp.`).join(' '),
);
const BREAKS = ['\n\n', '\n\n\n\n', '\n \t \n', '\n\n', '\n\n\n'];
const TEXT = PARAGRAPHS.map((paragraph, i) => paragraph + (BREAKS[i] ?? '')).join('');

describe('Reading a document back (text, chunks, file)', () => {
  let t: TestApp;
  let key: CreatedKey;
  let other: CreatedKey;
  let datasetId: string;
  let publicId: string;
  let textDoc: DocumentBody;
  let pdfDoc: DocumentBody;
  let pdfBytes: Buffer;

  const base = (documentId: string, dataset = datasetId) => `/v1/datasets/${dataset}/documents/${documentId}`;
  const get = (path: string, as: CreatedKey | null = key) => {
    const request = t.http.get(path);
    return as ? request.set(bearer(as)) : request;
  };

  /** Every chunk of a document, paged through by `limit` and `offset` as a client does. */
  async function allChunks(documentId: string, limit: number, dataset = datasetId): Promise<Chunk[]> {
    const chunks: Chunk[] = [];
    for (let offset = 0; ; offset += limit) {
      const page = await get(`${base(documentId, dataset)}/chunks?limit=${limit}&offset=${offset}`).expect(
        200,
      );
      expect(page.body).toMatchObject({ limit, offset, total: expect.any(Number) });
      chunks.push(...(page.body.chunks as Chunk[]));
      if (!page.body.has_more) return chunks;
    }
  }

  /** The whole text, paged through `next_offset` by `limit` characters. */
  async function pagedText(documentId: string, limit: number): Promise<string> {
    let text = '';
    for (let offset: number | null = 0, pages = 0; offset !== null; pages++) {
      expect(pages).toBeLessThan(1_000);
      const page = (await get(`${base(documentId)}/text?offset=${offset}&limit=${limit}`).expect(200))
        .body as TextPage;
      expect(page.offset).toBe(offset);
      expect(page.text.length).toBeLessThanOrEqual(limit);
      text += page.text;
      offset = page.next_offset;
    }
    return text;
  }

  beforeAll(async () => {
    // Chunks of about 100 characters, so that short documents have many, overlapping.
    t = await startTestApp({ CHUNK_TOKENS: '32', CHUNK_OVERLAP_TOKENS: '8' });
    [key, other] = [await t.createApiKey(), await t.createApiKey('other-account')];
    datasetId = await createDataset(t.http, key);
    publicId = await createDataset(t.http, key, { is_public: true });
    pdfBytes = await readFile(`${FIXTURES}/${PDF}`);
    const text = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .send({ content: TEXT })
      .expect(201);
    const pdf = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .attach('file', pdfBytes, PDF_NAME)
      .expect(201);
    textDoc = await waitForDocument(t.http, key, datasetId, text.body.document_id);
    pdfDoc = await waitForDocument(t.http, key, datasetId, pdf.body.document_id);
    expect([textDoc.status, pdfDoc.status]).toEqual(['ready', 'ready']);
  }, 60_000);
  afterAll(() => t.close());

  it('gives the text whole, with each chunk in order at its offsets, and no pages for plain text', async () => {
    const whole = (await get(`${base(textDoc.document_id)}/text?limit=100000`).expect(200)).body as TextPage;
    expect(whole).toEqual({
      document_id: textDoc.document_id,
      text: TEXT,
      offset: 0,
      next_offset: null,
      total_characters: TEXT.length,
      pages: null,
    });
    const chunks = await allChunks(textDoc.document_id, 7);
    expect(chunks.length).toBe(textDoc.chunks_created);
    expect(chunks.length).toBeGreaterThan(10);
    expect(chunks.map((c) => c.chunk_index)).toEqual(chunks.map((_, i) => i));
    for (const chunk of chunks) {
      expect(chunk).toEqual({
        chunk_id: expect.stringMatching(/^chk_/),
        chunk_index: expect.any(Number),
        content: whole.text.slice(chunk.char_start, chunk.char_end),
        char_start: expect.any(Number),
        char_end: expect.any(Number),
        page: null,
        token_count: expect.any(Number),
      });
      expect(chunk.token_count).toBeGreaterThan(0);
    }
    expect(chunks.some((c, i) => i > 0 && c.char_start < chunks[i - 1].char_end)).toBe(true);
  });

  it('pages the text by next_offset: pages meet, and together they are the whole', async () => {
    const whole = (await get(`${base(textDoc.document_id)}/text?limit=100000`).expect(200)).body as TextPage;
    expect(await pagedText(textDoc.document_id, 97)).toBe(whole.text);
    const last = await get(`${base(textDoc.document_id)}/text?offset=${TEXT.length - 5}&limit=10`).expect(
      200,
    );
    expect(last.body).toMatchObject({ text: TEXT.slice(-5), next_offset: null });
    const end = await get(`${base(textDoc.document_id)}/text?offset=${TEXT.length}`).expect(200);
    expect(end.body).toMatchObject({ text: '', next_offset: null, total_characters: TEXT.length });
  });

  it("gives a PDF's pages, each the range of its chunks in the text", async () => {
    const whole = (await get(`${base(pdfDoc.document_id)}/text?limit=100000`).expect(200)).body as TextPage;
    expect(whole.next_offset).toBeNull();
    expect(whole.text.length).toBe(whole.total_characters);
    expect(whole.text.replace(/\s+/g, ' ')).toContain('Hello, here is some text without a meaning');
    expect(whole.pages!.map((p) => p.page)).toEqual([1, 2, 3, 4]);
    const chunks = await allChunks(pdfDoc.document_id, 100);
    expect(chunks.length).toBe(pdfDoc.chunks_created);
    for (const page of whole.pages!) {
      const own = chunks.filter((c) => c.page === page.page);
      expect(page.char_start).toBe(own[0].char_start);
      expect(page.char_end).toBe(own[own.length - 1].char_end);
    }
    for (let i = 1; i < whole.pages!.length; i++) {
      expect(whole.pages![i].char_start).toBeGreaterThanOrEqual(whole.pages![i - 1].char_end);
    }
    for (const chunk of chunks)
      expect(whole.text.slice(chunk.char_start, chunk.char_end)).toBe(chunk.content);
    // A page read by its range, as a client jumps to it.
    const second = whole.pages![1];
    const read = await get(
      `${base(pdfDoc.document_id)}/text?offset=${second.char_start}&limit=${second.char_end - second.char_start}`,
    ).expect(200);
    expect(read.body.text).toBe(whole.text.slice(second.char_start, second.char_end));
    expect(read.body.next_offset).toBe(second.char_end);
  });

  it('gives a chunk with its neighbours on either side, in order', async () => {
    const chunks = await allChunks(textDoc.document_id, 100);
    const at = (i: number) => chunks[i];
    const around = await get(`${base(textDoc.document_id)}/chunks/${at(3).chunk_id}?neighbours=2`).expect(
      200,
    );
    expect(around.body).toEqual({ chunk: at(3), before: [at(1), at(2)], after: [at(4), at(5)] });
    const alone = await get(`${base(textDoc.document_id)}/chunks/${at(3).chunk_id}?neighbours=0`).expect(200);
    expect(alone.body).toEqual({ chunk: at(3), before: [], after: [] });
    const first = await get(`${base(textDoc.document_id)}/chunks/${at(0).chunk_id}`).expect(200);
    expect(first.body).toEqual({ chunk: at(0), before: [], after: [at(1)] });
    const lastIndex = chunks.length - 1;
    const last = await get(`${base(textDoc.document_id)}/chunks/${at(lastIndex).chunk_id}?neighbours=5`);
    expect(last.body.before.map((c: Chunk) => c.chunk_index)).toEqual(
      [0, 1, 2, 3, 4].map((i) => lastIndex - 5 + i),
    );
    expect(last.body.after).toEqual([]);
  });

  it('sends the original bytes with their media type and file name', async () => {
    const pdf = await fetch(`${t.url}${base(pdfDoc.document_id)}/file`, { headers: bearer(key) });
    expect(pdf.status).toBe(200);
    expect(Buffer.from(await pdf.arrayBuffer()).equals(pdfBytes)).toBe(true);
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
    expect(pdf.headers.get('content-length')).toBe(String(pdfBytes.length));
    expect(pdf.headers.get('content-disposition')).toBe(
      `attachment; filename="R_sum_ (4 pages).pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%284%20pages%29.pdf`,
    );
    expect(pdf.headers.get('x-ratelimit-limit')).toBe('1000');

    const text = await fetch(`${t.url}${base(textDoc.document_id)}/file`, { headers: bearer(key) });
    expect(await text.text()).toBe(TEXT);
    expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const name = `${textDoc.document_id}.txt`;
    expect(text.headers.get('content-disposition')).toBe(
      `attachment; filename="${name}"; filename*=UTF-8''${name}`,
    );
  });

  it("lets anyone read a public dataset's document, and no one another account's", async () => {
    const body = await t.http
      .post(`/v1/datasets/${publicId}/documents`)
      .set(bearer(key))
      .send({ content: 'The lighthouse stands on the northern cape.' })
      .expect(201);
    const id = body.body.document_id as string;
    await waitForDocument(t.http, key, publicId, id);
    for (const route of ['text', 'chunks', 'file']) {
      const answer = await get(`${base(id, publicId)}/${route}`, null).expect(200);
      expect(answer.headers['x-ratelimit-limit']).toBe('50');
    }
    const [chunk] = await allChunks(id, 20, publicId);
    await get(`${base(id, publicId)}/chunks/${chunk.chunk_id}`, null).expect(200);

    // Another account's private dataset: as if it did not exist, whoever asks, like get-document.
    for (const route of ['text', 'chunks', 'file', `chunks/${chunk.chunk_id}`]) {
      for (const caller of [other, null]) {
        const document = await get(base(textDoc.document_id), caller);
        const answer = await get(`${base(textDoc.document_id)}/${route}`, caller);
        expect([route, answer.status, answer.body]).toEqual([route, document.status, document.body]);
      }
      const answer = await get(`${base(textDoc.document_id)}/${route}`, other).expect(404);
      expect(answer.body).toEqual({
        error: expect.any(String),
        code: 'dataset_not_found',
        details: { dataset_id: datasetId },
      });
    }
    // A document of another dataset, in this one.
    const missing = await get(`${base(id)}/text`).expect(404);
    expect(missing.body).toMatchObject({ code: 'document_not_found', details: { document_id: id } });
  });

  it('answers 400 for bad parameters and 404 for a chunk not of the document, with the error body', async () => {
    const doc = base(textDoc.document_id);
    const cases: [string, string][] = [
      [`${doc}/text?offset=-1`, 'offset'],
      [`${doc}/text?offset=abc`, 'offset'],
      [`${doc}/text?limit=0`, 'limit'],
      [`${doc}/text?limit=100001`, 'limit'],
      [`${doc}/text?offset=${TEXT.length + 1}`, 'offset'],
      [`${doc}/chunks?limit=101`, 'limit'],
      [`${doc}/chunks?offset=-3`, 'offset'],
      [`${doc}/chunks?cursor=abc`, 'cursor'],
      [`${doc}/chunks/chk_x?neighbours=6`, 'neighbours'],
      [`${doc}/chunks/chk_x?neighbours=1.5`, 'neighbours'],
    ];
    for (const [path, field] of cases) {
      const answer = await get(path);
      expect([path, answer.status, answer.body.code, answer.body.details?.field]).toEqual([
        path,
        400,
        'validation_error',
        field,
      ]);
      expect(typeof answer.body.error).toBe('string');
    }
    const pdfChunk = (await get(`${base(pdfDoc.document_id)}/chunks?limit=1`).expect(200)).body
      .chunks[0] as Chunk;
    for (const chunkId of ['chk_0000000000000000000000', 'not-an-id', pdfChunk.chunk_id]) {
      const answer = await get(`${doc}/chunks/${chunkId}`).expect(404);
      expect(answer.body).toEqual({
        error: expect.any(String),
        code: 'chunk_not_found',
        details: { chunk_id: chunkId },
      });
    }
  });

  it('answers 409 for the text and chunks of a document without chunks, processing or failed, and still sends its file', async () => {
    const body = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .send({ content: 'A short note on tides.' })
      .expect(201);
    const id = body.body.document_id as string;
    await waitForDocument(t.http, key, datasetId, id);
    const [chunk] = await allChunks(id, 20);
    const reads = ['text', 'chunks', `chunks/${chunk.chunk_id}`];
    // Its chunks out of the index, as in a first run or a reprocess (a replacement keeps them: they are read).
    const setStatus = (status: string, error: object | null) =>
      t.sql.query(
        `UPDATE documents SET status = $2, error = $3, heartbeat_at = now(),
                              chunks_created = CASE WHEN $2 = 'ready' THEN 1 END
          WHERE id = $1`,
        [id, status, error ? JSON.stringify(error) : null],
      );

    await setStatus('processing', null);
    for (const route of reads) {
      const answer = await get(`${base(id)}/${route}`).expect(409);
      expect(answer.body).toEqual({
        error: expect.any(String),
        code: 'document_processing',
        details: { document_id: id },
      });
    }
    const failure = { code: 'invalid_pdf', message: 'The PDF is encrypted', details: {} };
    await setStatus('failed', failure);
    for (const route of reads) {
      const answer = await get(`${base(id)}/${route}`).expect(409);
      expect(answer.body).toEqual({
        error: expect.any(String),
        code: 'document_failed',
        details: {
          document_id: id,
          status: 'failed',
          error: { code: 'invalid_pdf', message: 'The PDF is encrypted' },
        },
      });
    }
    const file = await get(`${base(id)}/file`).expect(200);
    expect(file.text).toBe('A short note on tides.');
    await setStatus('ready', null);
    await get(`${base(id)}/text`).expect(200);
  });
});
