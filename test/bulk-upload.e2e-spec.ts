import { execFile } from 'node:child_process';
import http from 'node:http';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createDataset, type DocumentBody, waitForDocument } from './utils/documents.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

const FIXTURES = '../shared/fixtures';
const NDJSON = 'application/x-ndjson';

interface BulkResult {
  line: number;
  status: number;
  document?: DocumentBody & { dataset_id: string; filename?: string; size_bytes: number };
  error?: { error: string; code: string; details?: Record<string, unknown> };
}
interface BulkAnswer {
  created: number;
  failed: number;
  results: BulkResult[];
}

const ndjson = (...lines: unknown[]) =>
  lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n') + '\n';
const file = (filename: string, content: Buffer, metadata?: object) => ({
  filename,
  content_base64: content.toString('base64'),
  ...(metadata ? { metadata } : {}),
});

describe('Bulk upload (POST /v1/datasets/{id}/documents/bulk)', () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    // A JSON body limit well below the bulk bodies sent here: the bulk route reads its body itself.
    t = await startTestApp({ JSON_BODY_LIMIT_BYTES: '4096' });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
  });
  afterAll(() => t.close());

  const bulk = (body: string | Buffer, id = datasetId) =>
    t.http.post(`/v1/datasets/${id}/documents/bulk`).set(bearer(key)).set('Content-Type', NDJSON).send(body);

  const documentRows = async (id: string) => {
    const { rows } = await t.sql.query(
      `SELECT d.document_count, (SELECT count(*)::int FROM documents WHERE dataset_id = $1) AS documents
         FROM datasets d WHERE d.id = $1`,
      [id],
    );
    return rows[0] as { document_count: number; documents: number };
  };

  it('answers each line on its own, in order, and the documents it created become ready', async () => {
    const own = await createDataset(t.http, key);
    const pdf = await readFile(`${FIXTURES}/pdf/fake-memo.pdf`);
    const gif = Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1');
    const body = ndjson(
      { content: 'Hamburgers are delicious.', metadata: { category: 'food' } },
      file('memo.pdf', pdf, { title: 'Memo' }),
      'not json at all',
      '[1, 2]',
      '',
      { content: '\u200b' },
      file('picture.png', gif),
      { content: 'x', extra: true },
      file('notes.txt', Buffer.from('plain notes')),
      { filename: 'bad.txt', content_base64: 'not base64!' },
    );
    const response = await bulk(body, own).expect(200);
    const answer = response.body as BulkAnswer;
    expect(answer.created).toBe(3);
    expect(answer.failed).toBe(6);
    expect(answer.results.map((result) => [result.line, result.status, result.error?.code])).toEqual([
      [1, 201, undefined],
      [2, 201, undefined],
      [3, 400, 'invalid_json'],
      [4, 400, 'validation_error'],
      [6, 400, 'validation_error'],
      [7, 415, 'unsupported_file_type'],
      [8, 400, 'validation_error'],
      [9, 201, undefined],
      [10, 400, 'validation_error'],
    ]);
    const [text, memo] = answer.results;
    expect(text.document).toEqual({
      document_id: expect.stringMatching(/^doc_[0-9A-Za-z]{22}$/),
      dataset_id: own,
      size_bytes: 25,
      status: 'processing',
      created_at: expect.any(String),
      metadata: { category: 'food' },
    });
    expect(memo.document).toMatchObject({
      filename: 'memo.pdf',
      size_bytes: pdf.length,
      metadata: { title: 'Memo' },
    });
    expect(answer.results[5].error?.details).toMatchObject({ detected_type: 'image/gif' });
    expect(answer.results[6].error?.details).toMatchObject({ field: 'extra' });
    for (const result of answer.results.filter((r) => r.document)) {
      const done = await waitForDocument(t.http, key, own, result.document!.document_id);
      expect(done.status).toBe('ready');
    }
    expect(await documentRows(own)).toEqual({ document_count: 3, documents: 3 });
    const { rows } = await t.sql.query(
      `SELECT data FROM events WHERE event = 'document.uploaded' AND data->>'dataset_id' = $1 ORDER BY data->>'document_id'`,
      [own],
    );
    expect(rows).toHaveLength(3);
    expect(rows.map((row: { data: { status: string } }) => row.data.status)).toEqual([
      'processing',
      'processing',
      'processing',
    ]);
  });

  it('holds the per-dataset limit exactly under two concurrent bulks', async () => {
    const full = await createDataset(t.http, key);
    await t.sql.query('UPDATE datasets SET document_count = 9990 WHERE id = $1', [full]);
    const lines = (tag: string) =>
      ndjson(...Array.from({ length: 10 }, (_, i) => ({ content: `document ${tag} ${i}` })));
    const [a, b] = await Promise.all([bulk(lines('a'), full), bulk(lines('b'), full)]);
    const answers = [a.body as BulkAnswer, b.body as BulkAnswer];
    expect(answers.map((answer) => answer.created + answer.failed)).toEqual([10, 10]);
    expect(answers[0].created + answers[1].created).toBe(10);
    const refused = answers.flatMap((answer) => answer.results.filter((result) => result.error));
    expect(new Set(refused.map((result) => result.error?.code))).toEqual(new Set(['document_limit_reached']));
    expect(await documentRows(full)).toEqual({ document_count: 10000, documents: 10 });
  });

  it('replays the same request under the same Idempotency-Key, and refuses another body with it', async () => {
    const own = await createDataset(t.http, key);
    const body = ndjson({ content: 'once' }, { content: 'twice?' });
    const send = (payload: string) => bulk(payload, own).set('Idempotency-Key', 'bulk-replay');
    const first = await send(body).expect(200);
    const again = await send(body).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect((await send(ndjson({ content: 'other' })).expect(422)).body.code).toBe('idempotency_key_reused');
    expect(await documentRows(own)).toEqual({ document_count: 2, documents: 2 });
  });

  it('reads a body far over the JSON body limit, as it arrives, in chunks', async () => {
    const own = await createDataset(t.http, key);
    const lines = Array.from({ length: 150 }, (_, i) => ({ content: `${i} ${'word '.repeat(200)}` }));
    const body = ndjson(...lines);
    expect(body.length).toBeGreaterThan(100_000);
    const answer = await new Promise<{ status: number; body: BulkAnswer }>((resolve, reject) => {
      const request = http.request(
        `${t.url}/v1/datasets/${own}/documents/bulk`,
        { method: 'POST', headers: { ...bearer(key), 'Content-Type': NDJSON } },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
        },
      );
      request.on('error', reject);
      // Chunked, without Content-Length, cut through the middle of lines.
      for (let at = 0; at < body.length; at += 7_777) request.write(body.slice(at, at + 7_777));
      request.end();
    });
    expect(answer.status).toBe(200);
    expect(answer.body.created).toBe(150);
    expect(answer.body.results.map((result) => result.line)).toEqual(lines.map((_, i) => i + 1));
    expect(await documentRows(own)).toEqual({ document_count: 150, documents: 150 });
  });

  it('refuses an empty body, another media type and a declared length over the limit', async () => {
    expect((await bulk('\n\n').expect(400)).body).toMatchObject({
      code: 'validation_error',
      details: { field: 'body' },
    });
    const json = await t.http
      .post(`/v1/datasets/${datasetId}/documents/bulk`)
      .set(bearer(key))
      .send({ content: 'x' })
      .expect(415);
    expect(json.body.code).toBe('unsupported_media_type');
    const declared = await new Promise<{ status: number; body: { code: string } }>((resolve, reject) => {
      const request = http.request(
        `${t.url}/v1/datasets/${datasetId}/documents/bulk`,
        {
          method: 'POST',
          headers: { ...bearer(key), 'Content-Type': NDJSON, 'Content-Length': String(65 * 1024 * 1024) },
        },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
        },
      );
      request.on('error', reject);
      request.write('{"content": "x"}\n');
    });
    expect(declared).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
    expect((await bulk(ndjson({ content: 'x' }), 'ds_0000000000000000000000').expect(404)).body.code).toBe(
      'dataset_not_found',
    );
  });

  it('answers over 1,000 documents 413 too_many_documents, keeping those before, and replays it', async () => {
    const own = await createDataset(t.http, key);
    const body = ndjson({ content: 'the only valid one' }, ...Array.from({ length: 1_000 }, () => ({})));
    const send = () => bulk(body, own).set('Idempotency-Key', 'bulk-too-many');
    const first = await send().expect(413);
    expect(first.body).toMatchObject({
      code: 'too_many_documents',
      details: { limit: 1000, created: 1, failed: 999 },
    });
    expect(first.body.details.results).toHaveLength(1000);
    const again = await send().expect(413);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await documentRows(own)).toEqual({ document_count: 1, documents: 1 });
  });

  describe('documents import on the command line', () => {
    let folder: string;
    beforeAll(async () => {
      folder = await mkdtemp(join(tmpdir(), 'dss-import-'));
    });
    afterAll(() => rm(folder, { recursive: true, force: true }));

    /** Runs `documents import` against the test server; its exit code, summary and progress lines. */
    const importCli = async (datasetId: string, path: string) => {
      const run = promisify(execFile);
      const env = { PATH: process.env.PATH ?? '', DSS_URL: t.url, DSS_API_KEY: key.api_key };
      try {
        const { stdout, stderr } = await run(
          process.execPath,
          ['dist/cli.js', 'documents', 'import', datasetId, path],
          {
            env,
          },
        );
        return { code: 0, summary: JSON.parse(stdout), stderr };
      } catch (error) {
        const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
        return { code, summary: stdout ? JSON.parse(stdout) : null, stderr };
      }
    };

    it('uploads every file of a folder, recursively, and a re-run creates nothing twice', async () => {
      const files = join(folder, 'files');
      await mkdir(join(files, 'nested', 'deeper'), { recursive: true });
      await copyFile(`${FIXTURES}/pdf/fake-memo.pdf`, join(files, 'memo.pdf'));
      await copyFile(`${FIXTURES}/docx/tables.docx`, join(files, 'nested', 'tables.docx'));
      await copyFile(`${FIXTURES}/txt/fake-text.txt`, join(files, 'nested', 'deeper', 'fake-text.txt'));
      await copyFile(`${FIXTURES}/code/BubbleSort.js`, join(files, 'BubbleSort.js'));
      await writeFile(
        join(files, 'picture.gif'),
        Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1'),
      );
      await writeFile(join(files, '.hidden.txt'), 'left out');
      const own = await createDataset(t.http, key);

      const first = await importCli(own, files);
      expect(first.code).toBe(1);
      expect(first.summary).toMatchObject({ dataset_id: own, created: 4, replayed: 0, failed: 1 });
      expect(first.summary.failures).toEqual([
        {
          source: 'picture.gif',
          status: 415,
          error: expect.objectContaining({ code: 'unsupported_file_type' }),
        },
      ]);
      // Not a terminal: plain progress lines.
      expect(first.stderr).toContain('sent 5/5 documents: 4 created, 1 failed');
      const listed = await t.http.get(`/v1/datasets/${own}/documents?limit=100`).set(bearer(key)).expect(200);
      const names = (listed.body.documents as { filename: string }[])
        .map((document) => document.filename)
        .sort();
      expect(names).toEqual([
        'BubbleSort.js',
        'memo.pdf',
        'nested/deeper/fake-text.txt',
        'nested/tables.docx',
      ]);
      for (const document of listed.body.documents as DocumentBody[]) {
        expect((await waitForDocument(t.http, key, own, document.document_id)).status).toBe('ready');
      }

      const again = await importCli(own, files);
      expect(again.summary).toMatchObject({ created: 4, replayed: 4, failed: 1 });
      expect((await documentRows(own)).documents).toBe(4);
    });

    it('uploads each line of a JSONL file, and exits 0 when none failed', async () => {
      const own = await createDataset(t.http, key);
      const path = join(folder, 'documents.jsonl');
      const lines = Array.from({ length: 250 }, (_, i) =>
        JSON.stringify({ content: `line ${i}`, metadata: { i } }),
      );
      await writeFile(path, lines.join('\n') + '\n');
      const ok = await importCli(own, path);
      expect(ok).toMatchObject({ code: 0, summary: { created: 250, failed: 0, failures: [] } });
      // Three requests: 100, 100 and 50 documents.
      expect(ok.stderr.trim().split('\n')).toEqual([
        'sent 100/250 documents: 100 created, 0 failed',
        'sent 200/250 documents: 200 created, 0 failed',
        'sent 250/250 documents: 250 created, 0 failed',
      ]);
      expect(await documentRows(own)).toEqual({ document_count: 250, documents: 250 });

      const mixed = join(folder, 'mixed.jsonl');
      await writeFile(mixed, ['{"content": "fine"}', '', 'not json', '{"content": ""}'].join('\n'));
      const some = await importCli(own, mixed);
      expect(some.code).toBe(1);
      expect(some.summary).toMatchObject({ created: 1, failed: 2 });
      expect(
        some.summary.failures.map((f: { source: string; error: { code: string } }) => [
          f.source,
          f.error.code,
        ]),
      ).toEqual([
        ['line 3', 'invalid_json'],
        ['line 4', 'validation_error'],
      ]);
    });

    it('stops with a JSON error for a dataset the key cannot write', async () => {
      const failed = await importCli('ds_0000000000000000000000', join(folder, 'documents.jsonl'));
      expect(failed.code).toBe(1);
      expect(JSON.parse(failed.stderr.trim().split('\n').at(-1)!)).toMatchObject({
        code: 'dataset_not_found',
      });
    });
  });
});
