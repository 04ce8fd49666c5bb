import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { createDataset, type DocumentBody, waitForDocument } from './utils/documents.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

const FIXTURES = '../shared/fixtures';

interface Fixture {
  path: string;
  expect: 'ok' | 'ok_no_text' | 'ok_or_error' | 'error' | 'error_or_sniff';
  phrases: string[];
  ocr?: boolean;
}

const manifest = JSON.parse(readFileSync(`${FIXTURES}/manifest.json`, 'utf8')) as { files: Fixture[] };

/** The manifest's rule: case-insensitive substring after collapsing white space. */
const normalise = (text: string) => text.replace(/\s+/g, ' ').toLowerCase();

/** OCR reads quotes and dashes its own way; the manifest allows that noise for OCR fixtures. */
const ocrNormalise = (text: string) =>
  normalise(text)
    .replace(/[‘’`´]/g, "'")
    .replace(/[“”]/g, '"')
    .replace(/[–—]/g, '-');

/** A document's extracted text, rebuilt from its chunks' offsets (overlapping parts counted once). */
async function indexedText(t: TestApp, documentId: string): Promise<string> {
  const { rows } = await t.sql.query<{ content: string; char_start: number; char_end: number }>(
    'SELECT content, char_start, char_end FROM chunks WHERE document_id = $1 ORDER BY ordinal',
    [documentId],
  );
  let text = '';
  let end = 0;
  for (const chunk of rows) {
    text += chunk.char_start >= end ? ` ${chunk.content}` : chunk.content.slice(end - chunk.char_start);
    end = Math.max(end, chunk.char_end);
  }
  return text;
}

describe('Ingestion of real-world files (../shared/fixtures)', () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  const outcomes = new Map<
    string,
    { upload: { status: number; body: Record<string, unknown> }; final?: DocumentBody }
  >();
  const fixtures = manifest.files;

  beforeAll(async () => {
    // The real local-model code path, with a random-weight model of bge-small's shape.
    t = await startTestApp({ EMBEDDING_PROVIDER: 'local', EMBEDDING_MODEL: 'synthetic/bert-L12-H384' });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    for (const fixture of fixtures) {
      const response = await t.http
        .post(`/v1/datasets/${datasetId}/documents`)
        .set(bearer(key))
        .attach('file', await readFile(`${FIXTURES}/${fixture.path}`), basename(fixture.path));
      outcomes.set(fixture.path, {
        upload: { status: response.status, body: response.body as Record<string, unknown> },
      });
    }
    for (const outcome of outcomes.values()) {
      if (outcome.upload.status === 201) {
        outcome.final = await waitForDocument(
          t.http,
          key,
          datasetId,
          outcome.upload.body.document_id as string,
          120_000,
        );
      }
    }
  }, 240_000);
  afterAll(() => t.close());

  it('has all 34 fixtures', () => {
    expect(fixtures).toHaveLength(34);
  });

  it.each(fixtures.map((f) => [f.path, f] as const))('%s', async (_path, fixture) => {
    const outcome = outcomes.get(fixture.path);
    expect(outcome?.upload.status).toBe(201);
    const final = outcome?.final;
    if (!final) throw new Error('no final state');
    const text = final.status === 'ready' ? await indexedText(t, final.document_id) : '';
    const matches = (phrase: string) =>
      fixture.ocr
        ? ocrNormalise(text).includes(ocrNormalise(phrase))
        : normalise(text).includes(normalise(phrase));

    switch (fixture.expect) {
      case 'ok':
        expect(final.status).toBe('ready');
        expect(final.chunks_created).toBeGreaterThan(0);
        for (const phrase of fixture.phrases)
          expect({ phrase, found: matches(phrase) }).toEqual({ phrase, found: true });
        break;
      case 'ok_no_text':
        // Never a crash: a clear "no text" failure (the choice is in docs/decisions.md).
        expect(final).toMatchObject({ status: 'failed', error: { code: 'no_text_extracted' } });
        break;
      case 'ok_or_error':
        // The manifest allows a clear error; this service decodes UTF-16 and Latin-1 and reads the
        // malformed PPTX, so it holds itself to ingesting them.
        expect(final.status).toBe('ready');
        for (const phrase of fixture.phrases)
          expect({ phrase, found: matches(phrase) }).toEqual({ phrase, found: true });
        break;
      case 'error':
        expect(final.status).toBe('failed');
        expect(final.error?.code).toBe('invalid_pdf');
        expect(final.error?.message.length).toBeGreaterThan(10);
        break;
      case 'error_or_sniff':
        // A PNG named .pdf: the service sniffs it and reads it as an image.
        expect(final.status).toBe('ready');
        expect(normalise(text)).toContain('this is test message');
        break;
    }
  });

  it('keeps every chunk within the model’s input limit and embeds every chunk', async () => {
    const { rows } = await t.sql.query<{ max_tokens: number; missing: number; dims: number }>(
      `SELECT max(token_count)::int AS max_tokens, count(*) FILTER (WHERE embedding IS NULL)::int AS missing,
              max(vector_dims(embedding))::int AS dims
         FROM chunks c JOIN datasets d ON d.seq = c.dataset_seq WHERE d.id = $1`,
      [datasetId],
    );
    // The default CHUNK_TOKENS (512) is the model's window: its 512 tokens less its two special ones.
    expect(rows[0].max_tokens).toBeLessThanOrEqual(510);
    expect(rows[0].missing).toBe(0);
    expect(rows[0].dims).toBe(384);
  });

  it('records page and slide numbers for citation', async () => {
    const pages = async (name: string) => {
      const { rows } = await t.sql.query<{ page: number }>(
        `SELECT DISTINCT c.page FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.filename = $1 ORDER BY 1`,
        [name],
      );
      return rows.map((r) => r.page);
    };
    expect(await pages('pdflatex-4-pages.pdf')).toEqual([1, 2, 3, 4]);
    expect(await pages('sample-presentation.pptx')).toEqual([1, 2, 3, 4]);
  });
});
